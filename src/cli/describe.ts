// One-line descriptions of criteria leaves, for explain.

import type { Count, Leaf, Predicate, Window } from '../criteria/index.js';

function windowText(window: Window): string {
  switch (window.kind) {
    case 'ever':
      return 'ever';
    case 'last_n_days':
      return `in the last ${window.n} day${window.n === 1 ? '' : 's'}`;
    case 'between':
      return `from ${window.from.toISOString()} to ${window.to.toISOString()}${window.toExclusive ? ' (exclusive)' : ''}`;
  }
}

function countText(count: Count | null): string {
  return count === null || (count.op === '>=' && count.value === 1) ? 'at least once' : `count ${count.op} ${count.value}`;
}

export function predicateText(p: Predicate): string {
  return p.value === undefined ? `${p.field} ${p.op}` : `${p.field} ${p.op} ${JSON.stringify(p.value)}`;
}

function whereText(predicates: Predicate[]): string {
  return predicates.length === 0 ? '' : ` where ${predicates.map(predicateText).join(' and ')}`;
}

export function describeLeaf(leaf: Leaf): string {
  if ('occurrence' in leaf) {
    const what = leaf.source === 'product_event' ? `event ${JSON.stringify(leaf.name)}` : 'pageview';
    const occurrence = leaf.occurrence.op === 'did_not' ? 'did not' : `did ${countText(leaf.occurrence.count)}`;
    return `${what} ${occurrence}, ${windowText(leaf.occurrence.window)}${whereText(leaf.filter)}`;
  }
  if ('event' in leaf) return `payments event ${leaf.event}, ${windowText(leaf.window)}`;
  if (leaf.source === 'person') return leaf.filter.length === 0 ? 'any person' : `a person${whereText(leaf.filter)}`;
  return leaf.predicate.length === 0 ? `any ${leaf.entity}` : `a ${leaf.entity}${whereText(leaf.predicate)}`;
}
