/**
 * A counting semaphore: at most `limit` holders at once, waiters served in arrival order. A waiter whose signal
 * aborts leaves the queue with the signal's reason.
 */
export class ConcurrencyLimit {
  private held = 0;
  private readonly waiters: { resolve: () => void; reject: (reason: unknown) => void; signal: AbortSignal | undefined; onAbort: () => void }[] = [];

  constructor(readonly limit: number) {}

  /** Holders now. */
  get inUse(): number {
    return this.held;
  }

  /** Waits for a place; resolves with the function that gives it back (once). */
  async acquire(signal?: AbortSignal): Promise<() => void> {
    signal?.throwIfAborted();
    if (this.held < this.limit && this.waiters.length === 0) {
      this.held++;
    } else {
      await new Promise<void>((resolve, reject) => {
        const waiter = {
          resolve,
          reject,
          signal,
          onAbort: () => {
            const index = this.waiters.indexOf(waiter);
            if (index >= 0) this.waiters.splice(index, 1);
            reject(signal?.reason instanceof Error ? signal.reason : new Error('aborted while waiting for a place'));
          },
        };
        signal?.addEventListener('abort', waiter.onAbort, { once: true });
        this.waiters.push(waiter);
      });
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.release();
    };
  }

  private release(): void {
    const next = this.waiters.shift();
    if (next === undefined) {
      this.held--;
      return;
    }
    // the place passes straight to the next waiter: `held` stays the same
    next.signal?.removeEventListener('abort', next.onAbort);
    next.resolve();
  }
}
