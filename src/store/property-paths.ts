// The property paths of an event's payload, as the property catalog records them and payload
// filters name them.

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Paths of a JSON structure (objects only; arrays are leaves): `a`, `a.b`, … in document order.
 * The walk keeps its own stack, so no depth overflows it.
 */
export function propertyPaths(structure: unknown): string[] {
  const paths: string[] = [];
  const stack: { value: unknown; path: string }[] = [];
  let value = structure;
  let prefix = '';
  for (;;) {
    if (isObject(value)) {
      const keys = Object.keys(value);
      for (let i = keys.length - 1; i >= 0; i--) stack.push({ value: value[keys[i]!], path: prefix + keys[i] });
    }
    const next = stack.pop();
    if (!next) return paths;
    paths.push(next.path);
    value = next.value;
    prefix = `${next.path}.`;
  }
}
