// Bounded concurrency of delivery requests: at most `max` open at once (a thousand destinations do
// not open a thousand sockets), and at most `maxPerWorkspace` of them for one workspace, so the
// destinations of one workspace that hang can never take every slot from the others. Waiters are
// served in arrival order among those their workspace's share allows.

interface Waiter {
  workspace: string;
  grant: () => void;
}

export class Slots {
  private active = 0;
  private readonly byWorkspace = new Map<string, number>();
  private readonly waiting: Waiter[] = [];

  constructor(private readonly max: number, private readonly maxPerWorkspace: number) {}

  /** Runs `fn` in a slot of `workspace`; rejects with the signal's reason if aborted while waiting. */
  async run<T>(workspace: string, signal: AbortSignal, fn: () => Promise<T>): Promise<T> {
    await this.acquire(workspace, signal);
    try {
      return await fn();
    } finally {
      this.release(workspace);
    }
  }

  private allows(workspace: string): boolean {
    return this.active < this.max && (this.byWorkspace.get(workspace) ?? 0) < this.maxPerWorkspace;
  }

  private take(workspace: string): void {
    this.active++;
    this.byWorkspace.set(workspace, (this.byWorkspace.get(workspace) ?? 0) + 1);
  }

  private acquire(workspace: string, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.reject(signal.reason);
    // Waiters left queued are those their workspace's share holds back (dispatch serves the rest),
    // so a request that fits goes ahead of them without unfairness.
    if (this.allows(workspace)) {
      this.take(workspace);
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        this.waiting.splice(this.waiting.indexOf(waiter), 1);
        reject(signal.reason);
      };
      const waiter: Waiter = {
        workspace,
        grant: () => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(waiter);
    });
  }

  private release(workspace: string): void {
    this.active--;
    const left = (this.byWorkspace.get(workspace) ?? 1) - 1;
    if (left === 0) this.byWorkspace.delete(workspace);
    else this.byWorkspace.set(workspace, left);
    this.dispatch();
  }

  private dispatch(): void {
    for (let i = 0; i < this.waiting.length && this.active < this.max;) {
      const waiter = this.waiting[i]!;
      if (!this.allows(waiter.workspace)) {
        i++;
        continue;
      }
      this.waiting.splice(i, 1);
      this.take(waiter.workspace);
      waiter.grant();
    }
  }
}
