import { ResourceExhaustedError } from './errors.js';
import { Lifecycle, type TransitionTable } from './lifecycle.js';

/**
 * A stream's consumer read slower than its producer pushed: more than `capacity` items waited for it,
 * so the stream was ended rather than holding every item in memory. A server answers it with
 * RESOURCE_EXHAUSTED; the watcher watches again (each stream says what it then starts from).
 */
export class SlowConsumerError extends ResourceExhaustedError {
  constructor(
    /** Most items the stream held for its consumer. */
    readonly capacity: number,
  ) {
    super(`the watcher fell more than ${capacity} events behind and its stream was ended; watch again to resume`);
  }
}

/** Where a channel is: taking items, closed (its consumer drains what is left, then ends) or ended by a slow consumer. */
export type StreamChannelState = 'open' | 'closed' | 'overflowed';

const CHANNEL_TRANSITIONS: TransitionTable<StreamChannelState> = {
  open: ['closed', 'overflowed'],
  closed: [],
  overflowed: [],
};

/** How a channel is bounded and when it ends by itself. */
export interface StreamChannelOptions {
  /** Most items held for the consumer; one more pushed while they wait ends the stream with SlowConsumerError. */
  readonly capacity: number;
  /** Closes the channel when it aborts (the call was cancelled, or the server is shutting down). */
  readonly signal?: AbortSignal;
}

/**
 * The one bounded channel behind every server-streaming watch (nats.js `QueuedIterator`, bounded):
 * the producer `push`es and is never blocked; one consumer iterates with `for await`, which waits
 * while the channel is empty.
 *
 * - Order: items come out in the order they were pushed.
 * - Bound: at most `capacity` items wait. A push beyond that drops the backlog, and the consumer's
 *   next step throws SlowConsumerError (RESOURCE_EXHAUSTED at the gRPC boundary: "the watcher fell
 *   more than N events behind …; watch again to resume"). A slow watcher is ended, never made to
 *   slow the producer down and never left to hold unbounded memory.
 * - End: `close()` (idempotent) or the signal aborting stops taking pushes; the consumer still gets
 *   what was pushed before, then the iteration ends. So a health watcher hears NOT_SERVING at
 *   shutdown, and a cancelled call (whose sends do nothing) ends after a bounded drain.
 * - A consumer that stops iterating (break, throw) closes the channel; later pushes are dropped.
 */
export class StreamChannel<T> implements AsyncIterable<T> {
  /** Most items held for the consumer. */
  readonly capacity: number;
  private readonly backlog: T[] = [];
  private readonly lifecycle = new Lifecycle<StreamChannelState>('stream channel', CHANNEL_TRANSITIONS, 'open');
  private readonly signal: AbortSignal | undefined;
  private readonly onAbort = (): void => this.close();
  private wake: (() => void) | undefined;

  constructor(options: StreamChannelOptions) {
    if (!Number.isSafeInteger(options.capacity) || options.capacity < 1) {
      throw new RangeError(`stream channel capacity must be a whole number of at least 1, not ${options.capacity}`);
    }
    this.capacity = options.capacity;
    this.signal = options.signal;
    if (this.signal?.aborted === true) this.close();
    else this.signal?.addEventListener('abort', this.onAbort, { once: true });
  }

  /** Where the channel is. */
  get state(): StreamChannelState {
    return this.lifecycle.state;
  }

  /** Items waiting for the consumer. */
  get size(): number {
    return this.backlog.length;
  }

  /** Hands an item to the consumer without waiting; dropped once the channel has ended. Past capacity it ends the stream. */
  push(item: T): void {
    if (!this.lifecycle.is('open')) return;
    if (this.backlog.length >= this.capacity) {
      this.end('overflowed');
      // the consumer is ended, so what it did not take is released at once
      this.backlog.length = 0;
      return;
    }
    this.backlog.push(item);
    this.notify();
  }

  /** Takes no more items; the consumer gets what was pushed before, then its iteration ends. A second call does nothing. */
  close(): void {
    if (this.lifecycle.is('open')) this.end('closed');
  }

  /** The items in push order; ends after `close`, throws SlowConsumerError once the backlog passed capacity. */
  async *[Symbol.asyncIterator](): AsyncGenerator<T, void, undefined> {
    try {
      for (;;) {
        // shift() is defined here: the backlog is not empty
        while (this.backlog.length > 0) yield this.backlog.shift() as T;
        if (this.lifecycle.is('overflowed')) throw new SlowConsumerError(this.capacity);
        if (this.lifecycle.is('closed')) return;
        await new Promise<void>((resolve) => {
          this.wake = resolve;
        });
      }
    } finally {
      this.close();
    }
  }

  private end(state: 'closed' | 'overflowed'): void {
    this.lifecycle.to(state);
    this.signal?.removeEventListener('abort', this.onAbort);
    this.notify();
  }

  private notify(): void {
    const waiting = this.wake;
    this.wake = undefined;
    waiting?.();
  }
}
