// Group commit: requests that arrive while a transaction runs wait, then go in together as one
// transaction of their workspace. A statement costs about the same for 500 rows as for 2,000, so
// concurrent batches share the statements' fixed cost. Each request still gets its own results,
// in arrival order; if the shared transaction fails, every request in it fails and none is stored.

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
   * @param write stores `items` of one workspace in one transaction and returns one result per item
   * @param maxItems the most items one transaction takes (a request is never split)
   */
  constructor(private readonly write: (workspaceId: string, items: T[]) => Promise<R[]>, private readonly maxItems = 5000) {}

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
        const group = this.takeGroup();
        const items = group.flatMap((p) => p.items);
        try {
          const results = await this.write(group[0]!.workspaceId, items);
          let offset = 0;
          for (const p of group) {
            p.resolve(results.slice(offset, offset + p.items.length));
            offset += p.items.length;
          }
        } catch (err) {
          for (const p of group) p.reject(err);
        }
      }
    } finally {
      this.running = false;
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
