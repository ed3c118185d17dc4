// Fresh person and visitor keys, drawn from the engine's sequences a block at a time: a statement
// costs about the same for one key as for 10,000. Each control store holds its own blocks.

import type { ControlSql, KeySequence } from './store.js';

const KEY_BLOCK = 10_000;

export class KeyBlocks {
  /** Keys drawn and not handed out yet, the next one last. */
  private readonly free: Record<KeySequence, number[]> = { person_keys: [], visitor_keys: [] };

  /** `store` runs statements outside any transaction. */
  constructor(private readonly store: ControlSql) {}

  /**
   * `n` fresh keys from a sequence. Blocks are drawn on a connection of their own, committed at
   * once: a rolled-back transaction leaves a gap, never a key handed out twice.
   */
  async next(sequence: KeySequence, n: number): Promise<number[]> {
    if (n === 0) return [];
    const pool = this.free[sequence];
    if (pool.length < n) {
      const block = await this.store.all(this.store.dialect.nextKeys(sequence, Math.max(Math.trunc(n), KEY_BLOCK)));
      for (let i = block.length - 1; i >= 0; i--) pool.push(Number(block[i]!.k));
    }
    return pool.splice(pool.length - n, n);
  }
}
