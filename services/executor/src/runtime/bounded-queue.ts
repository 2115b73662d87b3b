import { UnavailableError } from '@loom/domain';

/** The queue was closed: nothing more goes in. */
export class QueueClosedError extends UnavailableError {
  constructor(readonly queue: string) {
    super(`${queue} no longer takes messages (the workflow is stopping)`);
  }
}

interface Waiter {
  resolve(): void;
  reject(error: Error): void;
}

/** An abort signal's reason as an Error. */
function reasonOf(signal: AbortSignal | undefined): Error {
  const reason: unknown = signal?.reason;
  return reason instanceof Error ? reason : new QueueClosedError('the queue');
}

/**
 * A bounded FIFO between components: `put` waits while it is full, which is how a slow component
 * slows everything upstream of it down to the sources, and memory stays bounded by the capacities.
 * Waiting writers are served in order.
 */
export class BoundedQueue<T> {
  private items: T[] = [];
  private head = 0;
  private readonly writers: Waiter[] = [];
  private readers: (() => void)[] = [];
  private closed = false;

  constructor(
    private readonly name: string,
    readonly capacity: number,
  ) {}

  get size(): number {
    return this.items.length - this.head;
  }

  /** Queues the item at once when there is room and nobody waits ahead of it; false otherwise (nothing queued). */
  tryPut(item: T): boolean {
    if (this.closed || this.size >= this.capacity || this.writers.length > 0) return false;
    this.push(item);
    return true;
  }

  /** Resolves once the item is queued; waits while the queue is full. Rejects when the queue closes or the signal aborts. */
  put(item: T, signal?: AbortSignal): Promise<void> {
    if (this.closed) return Promise.reject(new QueueClosedError(this.name));
    if (this.size < this.capacity && this.writers.length === 0) {
      this.push(item);
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          this.push(item);
          resolve();
        },
        reject: (error) => {
          signal?.removeEventListener('abort', onAbort);
          reject(error);
        },
      };
      const onAbort = (): void => {
        const index = this.writers.indexOf(waiter);
        if (index >= 0) this.writers.splice(index, 1);
        reject(reasonOf(signal));
      };
      if (signal?.aborted) return reject(reasonOf(signal));
      signal?.addEventListener('abort', onAbort, { once: true });
      this.writers.push(waiter);
    });
  }

  /**
   * Takes up to `max` items, waiting while the queue is empty; an empty array once it is closed and
   * drained. With `gatherMs`, once the first item is there it waits up to that long for `max` items
   * (or the queue's capacity) before taking what there is: how a component batches its writes.
   */
  async take(max: number, gatherMs = 0): Promise<T[]> {
    while (this.size === 0) {
      if (this.closed) return [];
      await new Promise<void>((resolve) => this.readers.push(resolve));
    }
    const wanted = Math.min(max, this.capacity);
    if (gatherMs > 0 && this.size < wanted) {
      const deadline = Date.now() + gatherMs;
      for (let left = gatherMs; left > 0 && this.size < wanted && !this.closed; left = deadline - Date.now()) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left);
          this.readers.push(() => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
    }
    const end = Math.min(this.items.length, this.head + max);
    const taken = this.items.slice(this.head, end);
    this.head = end;
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    this.admitWriters();
    return taken;
  }

  /** No more puts; waiting writers are refused and readers get what is left, then an empty array. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const writer of this.writers.splice(0)) writer.reject(new QueueClosedError(this.name));
    this.wakeReaders();
  }

  private push(item: T): void {
    this.items.push(item);
    this.wakeReaders();
  }

  private admitWriters(): void {
    while (this.size < this.capacity) {
      const writer = this.writers.shift();
      if (writer === undefined) return;
      writer.resolve();
    }
  }

  private wakeReaders(): void {
    if (this.readers.length === 0) return;
    const waiting = this.readers;
    this.readers = [];
    for (const wake of waiting) wake();
  }
}
