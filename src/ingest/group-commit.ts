// Group commit: requests that arrive while a transaction runs wait, then go in together as one
// transaction of their workspace. A statement costs about the same for 500 rows as for 2,000, so
// concurrent batches share the statements' fixed cost. Each request still gets its own results,
// in arrival order. When a shared transaction fails, its requests are retried apart (the group
// split in halves until the failing ones stand alone), so a request only ever fails for itself.
// A write is a staged unit of work (store/analytics.ts): only its transaction is split and retried.
// Once it has committed, the next group starts while its rows are being stored; its requests are
// answered when they are, and a failure there is theirs to report, never a reason to run them again.

import type { Staged } from '../store/analytics.js';

interface Pending<T, R> {
  workspaceId: string;
  items: T[];
  resolve: (results: R[]) => void;
  reject: (err: unknown) => void;
}

export class GroupCommit<T, R> {
  private readonly queue: Pending<T, R>[] = [];
  private running = false;

  /**
   * @param write commits `items` of one workspace in one transaction, with one result per item
   * @param maxItems the most items one transaction takes (a request is never split)
   */
  constructor(private readonly write: (workspaceId: string, items: T[]) => Promise<Staged<R[]>>, private readonly maxItems = 5000) {}

  submit(workspaceId: string, items: T[]): Promise<R[]> {
    return new Promise((resolve, reject) => {
      this.queue.push({ workspaceId, items, resolve, reject });
      void this.drain();
    });
  }

  private async drain(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      while (this.queue.length > 0) {
        await this.commit(this.takeGroup());
      }
    } finally {
      this.running = false;
    }
  }

  /**
   * Writes `group` in one transaction; if that fails, writes each half of it apart, in order, down
   * to single requests. One bad request among n costs about 2·log2(n) extra transactions, and
   * rolled-back attempts leave nothing behind (the write is all-or-nothing).
   */
  private async commit(group: Pending<T, R>[]): Promise<void> {
    let staged: Staged<R[]>;
    try {
      staged = await this.write(group[0]!.workspaceId, group.flatMap((p) => p.items));
    } catch (err) {
      if (group.length === 1) return group[0]!.reject(err);
      const half = Math.ceil(group.length / 2);
      await this.commit(group.slice(0, half));
      await this.commit(group.slice(half));
      return;
    }
    let offset = 0;
    for (const p of group) {
      const results = staged.value.slice(offset, offset + p.items.length);
      offset += p.items.length;
      staged.stored.then(() => p.resolve(results), p.reject);
    }
  }

  /**
   * The oldest request and the next ones of its workspace, in order, up to `maxItems` items (the
   * first that does not fit ends the group, so a workspace's requests never overtake each other).
   */
  private takeGroup(): Pending<T, R>[] {
    const first = this.queue.shift()!;
    const group = [first];
    let size = first.items.length;
    for (let i = 0; i < this.queue.length;) {
      const p = this.queue[i]!;
      if (p.workspaceId !== first.workspaceId) {
        i++;
        continue;
      }
      if (size + p.items.length > this.maxItems) break;
      group.push(p);
      size += p.items.length;
      this.queue.splice(i, 1);
    }
    return group;
  }
}
