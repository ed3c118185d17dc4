// What the benches read of a tinybench run: a task's p50, failing loudly when it did not complete.

import type { Bench } from 'tinybench';

/** The p50 latency (ms) of task `name` of a run bench; throws when the task did not complete. */
export function p50Of(bench: Bench, name: string): number {
  const r = bench.getTask(name)?.result;
  if (!r || r.state !== 'completed') throw new Error(`${name}: ${r?.state}`);
  return r.latency.p50;
}
