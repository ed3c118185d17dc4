// Ingest limits (README "Limits"), defined once. Like Segment's: an event is at most 32 KB of JSON;
// its properties and traits nest at most 10 levels; it brings at most 256 property paths to the
// property definitions (the criteria whitelist, decisions §4), each at most 256 characters; a
// person update's traits are at most 32 KB. Past a limit the request is refused (400 naming the
// field) before it joins a group commit, so it cannot fail anyone else's batch.

import type { z } from 'zod';

export const INGEST_LIMITS = {
  /** An event's JSON, the fields the service reads (unknown keys are dropped first), in UTF-8 bytes. */
  eventBytes: 32 * 1024,
  /** Keys or indexes below `properties` or `traits`: `properties.a.b` is 2 levels. */
  depth: 10,
  /**
   * Property paths of one event (`a`, `a.b`, …; arrays are leaves). Past it the event is refused,
   * not cataloged in part: every path of a stored event stays usable in criteria (decisions §4).
   */
  propertyPaths: 256,
  /** One property path, dots included. */
  propertyPathChars: 256,
  /** The `traits` of one person update (or of one event), as JSON in UTF-8 bytes. */
  traitsBytes: 32 * 1024,
} as const;

type Segment = string | number;

/** A container of the walk; its path is rebuilt from the parents only when a fault is reported. */
interface Level {
  value: object;
  key: Segment;
  parent: Level | null;
  depth: number;
  /** Characters of its property path (`a.b` is 3); -1 below an array, where nothing is cataloged. */
  pathChars: number;
}

interface Fault {
  path: Segment[];
  message: string;
}

const pathOf = (level: Level, key: Segment): Segment[] => {
  const path: Segment[] = [key];
  for (let l: Level | null = level; l?.parent; l = l.parent) path.unshift(l.key);
  return path;
};

/**
 * The first fault of a properties or traits object, in document order: nesting past the depth
 * limit, and when `cataloged` (properties) more property paths than the limit or a path too long.
 * The walk keeps its own stack and builds no path text: a 1 MiB body can nest 500,000 levels, far
 * past what recursion or JSON.stringify survive, so this runs before either.
 */
export function payloadFault(root: object, cataloged: boolean): Fault | null {
  let paths = 0;
  const stack: Level[] = [{ value: root, key: '', parent: null, depth: 0, pathChars: 0 }];
  while (stack.length > 0) {
    const level = stack.pop()!;
    const { value, depth } = level;
    const array = Array.isArray(value);
    const keys: Segment[] = array ? Array.from(value.keys()) : Object.keys(value);
    if (keys.length > 0 && depth === INGEST_LIMITS.depth) {
      return { path: pathOf(level, keys[0]!), message: `is nested deeper than ${INGEST_LIMITS.depth} levels of objects and arrays` };
    }
    const inner: Level[] = [];
    for (const key of keys) {
      const child = (value as Record<Segment, unknown>)[key];
      let pathChars = -1;
      if (!array && level.pathChars >= 0) {
        pathChars = level.pathChars + (depth > 0 ? 1 : 0) + (key as string).length;
        if (cataloged && pathChars > INGEST_LIMITS.propertyPathChars) {
          return { path: pathOf(level, key), message: `is a property path of ${pathChars} characters (a.b.c); at most ${INGEST_LIMITS.propertyPathChars}` };
        }
        if (cataloged && ++paths > INGEST_LIMITS.propertyPaths) {
          return { path: [], message: `hold more than ${INGEST_LIMITS.propertyPaths} property paths (a, a.b, …; an array is one)` };
        }
      }
      if (typeof child === 'object' && child !== null) inner.push({ value: child, key, parent: level, depth: depth + 1, pathChars });
    }
    // Reversed onto the stack, so containers are walked in document order.
    for (let i = inner.length - 1; i >= 0; i--) stack.push(inner[i]!);
  }
  return null;
}

const addFault = (ctx: z.RefinementCtx, { path, message }: Fault) => ctx.addIssue({ code: 'custom', path, message });

/** zod check of `properties`: depth, number and length of its property paths. */
export function propertiesWithinLimits(properties: Record<string, unknown>, ctx: z.RefinementCtx): void {
  const fault = payloadFault(properties, true);
  if (fault) addFault(ctx, fault);
}

/** The first fault of `traits`: depth, then size (measured only once the depth is known to be bounded). */
export function traitsFault(traits: object): Fault | null {
  const fault = payloadFault(traits, false);
  if (fault) return fault;
  const bytes = bytesOver(traits, INGEST_LIMITS.traitsBytes);
  return bytes === null ? null : { path: [], message: `are ${bytes} bytes as JSON; at most ${INGEST_LIMITS.traitsBytes}` };
}

/** zod check of `traits`. */
export function traitsWithinLimits(traits: Record<string, unknown>, ctx: z.RefinementCtx): void {
  const fault = traitsFault(traits);
  if (fault) addFault(ctx, fault);
}

/**
 * An upper bound of the UTF-8 bytes of `value` as JSON, cheap to reach: a UTF-16 unit takes at
 * most 6 bytes (`\u001f`), a number at most 25 characters.
 */
function jsonBytesAtMost(value: unknown): number {
  let bytes = 0;
  const stack = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'string') bytes += 2 + 6 * v.length;
    else if (typeof v !== 'object' || v === null) bytes += 25;
    else {
      bytes += 2;
      for (const key in v) {
        bytes += 4 + 6 * key.length;
        stack.push((v as Record<string, unknown>)[key]);
      }
    }
  }
  return bytes;
}

/**
 * The UTF-8 bytes of `value` as JSON when they are more than `limit`, else null. Most values are
 * far below by a cheap upper bound; only the others are serialized to be measured. Call it once
 * the depth is known to be bounded: JSON.stringify overflows the stack on deep values.
 */
function bytesOver(value: object, limit: number): number | null {
  if (jsonBytesAtMost(value) <= limit) return null;
  const bytes = Buffer.byteLength(JSON.stringify(value));
  return bytes > limit ? bytes : null;
}

/** The size fault of a whole event; only for an otherwise valid event, whose payloads are shallow. */
export function eventSizeFault(event: object): Fault | null {
  const bytes = bytesOver(event, INGEST_LIMITS.eventBytes);
  return bytes === null ? null : { path: [], message: `is ${bytes} bytes as JSON; at most ${INGEST_LIMITS.eventBytes}` };
}

/** zod check of a whole event's size; only on an otherwise valid event (`onValid`). */
export function eventWithinSize(event: object, ctx: z.RefinementCtx): void {
  const fault = eventSizeFault(event);
  if (fault) addFault(ctx, fault);
}

/** `when` of a refinement that must only see a value whose other checks all passed. */
export const onValid = { when: (payload: { issues: readonly unknown[] }) => payload.issues.length === 0 };
