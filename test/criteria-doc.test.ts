// docs/criteria.md documents the whole criteria language: each leaf's keys, every field of the
// whitelists with its ops, and an example per node that the validator accepts as written.

import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { validateCriteria } from '../src/criteria/index.js';
import { OPS_BY_TYPE, PAGEVIEW_FIELDS, PAYMENTS_FIELDS, PREDICATE_OPS } from '../src/criteria/schema.js';

const DOC = readFileSync(new URL('../docs/criteria.md', import.meta.url), 'utf8');
const REFERENCE = DOC.slice(DOC.indexOf('## The language'), DOC.indexOf('## Who is counted'));
/** The examples' roots: every JSON block of the section but the envelope's outline. */
const EXAMPLES = [...REFERENCE.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => m[1]!).filter((text) => !text.includes('…'))
  .map((text) => JSON.parse(text) as Record<string, unknown>);
const CATALOG = { events: new Map([['signup', new Set(['plan'])]]), traits: new Set(['plan', 'company']) };

describe('docs/criteria.md', () => {
  it('has an example of every leaf and branch, each valid as a root', () => {
    const kinds = EXAMPLES.map((root) => (root.op ? String(root.op) : `${String(root.source)}${root.entity ? ' state' : root.event ? ' event' : ''}`));
    expect(kinds).toEqual(expect.arrayContaining(['product_event', 'pageview', 'payments event', 'payments state', 'person', 'and']));
    for (const root of EXAMPLES) {
      const result = validateCriteria({ version: 1, root }, CATALOG);
      expect(result.ok ? [] : result.errors, JSON.stringify(root)).toEqual([]);
    }
  });

  it('names the payments state leaf\'s predicate key, every field of each leaf and every op', () => {
    expect(REFERENCE).toContain('`predicate` (optional; not `filter`)');
    const fields = [...Object.keys(PAGEVIEW_FIELDS), ...Object.values(PAYMENTS_FIELDS).flatMap((f) => Object.keys(f))];
    for (const field of fields) expect(REFERENCE, field).toContain(`\`${field}\``);
    for (const op of PREDICATE_OPS) expect(REFERENCE, op).toContain(`\`${op}\``);
    // The ops of numbers and booleans, as the validator's table has them.
    expect(REFERENCE).toContain(OPS_BY_TYPE.number.map((op) => `\`${op}\``).join(', '));
    expect(REFERENCE).toContain(OPS_BY_TYPE.boolean.map((op) => `\`${op}\``).join(', '));
    for (const key of ['"kind": "between"', '"from"', '"to"', '"last_n_days"', '"n"']) expect(REFERENCE).toContain(key);
  });
});
