import { type Context } from '@opentelemetry/api';
import { Lifecycle } from '@loom/foundation';
import { type Msg, type Subscription } from 'nats';
import { type MessagingError } from './errors.js';
import { extractTraceContext } from './trace-context.js';

/** A message of a core NATS subject. */
export interface SubjectMessage {
  readonly subject: string;
  readonly payload: Uint8Array;
  /** Its headers, the first value of each (none: empty). */
  readonly headers: Readonly<Record<string, string>>;
  /** The publisher's trace context on top of `base`. */
  traceContext(base?: Context): Context;
}

type SubscriptionState = 'subscribed' | 'ended' | 'stopped';

const SUBSCRIPTION_TRANSITIONS = {
  subscribed: ['ended', 'stopped'],
  ended: ['stopped'],
  stopped: [],
} as const satisfies Record<SubscriptionState, readonly SubscriptionState[]>;

/**
 * The messages of a core subject as an async iterable (made by NatsConnector.subscribe). Core NATS is at most once and
 * has no back-pressure, so a reader that falls behind is handled one way: at most `maxBuffered` messages wait for it,
 * and each newer one is dropped and counted in `dropped`. stop() ends the iteration; a subscription the server ended
 * (a permission refused) ends it with that typed error.
 */
export class SubjectSubscription implements AsyncIterable<SubjectMessage> {
  private readonly lifecycle: Lifecycle<SubscriptionState>;
  private readonly buffer: SubjectMessage[] = [];
  private subscription: Subscription | undefined;
  private wake: (() => void) | undefined;
  private failure: MessagingError | undefined;
  private droppedCount = 0;

  constructor(
    readonly subject: string,
    private readonly maxBuffered: number,
  ) {
    this.lifecycle = new Lifecycle(`subscription to '${subject}'`, SUBSCRIPTION_TRANSITIONS, 'subscribed');
  }

  /** Messages dropped because `maxBuffered` were waiting already. */
  get dropped(): number {
    return this.droppedCount;
  }

  /** Messages waiting for the reader. */
  get pending(): number {
    return this.buffer.length;
  }

  /** The client's subscription this one reads (set once, by NatsConnector.subscribe). */
  bind(subscription: Subscription): void {
    this.subscription = subscription;
  }

  /** Takes a message from the client: kept for the reader, or dropped when `maxBuffered` wait already. */
  receive(message: Msg): void {
    if (!this.lifecycle.is('subscribed')) return;
    if (this.buffer.length >= this.maxBuffered) {
      this.droppedCount += 1;
      return;
    }
    this.buffer.push(subjectMessage(message));
    this.wakeReader();
  }

  /** The server ended the subscription: the reader gets what waits, then this error. */
  end(error: MessagingError): void {
    if (!this.lifecycle.is('subscribed')) return;
    this.failure = error;
    this.lifecycle.to('ended');
    this.wakeReader();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<SubjectMessage> {
    for (;;) {
      const next = this.buffer.shift();
      if (next !== undefined) {
        yield next;
        continue;
      }
      if (this.lifecycle.is('stopped')) return;
      if (this.failure !== undefined) throw this.failure;
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  /** Unsubscribes and ends the iteration (messages still waiting are dropped); a second call does nothing. */
  stop(): Promise<void> {
    if (!this.lifecycle.is('stopped')) {
      this.lifecycle.to('stopped');
      this.subscription?.unsubscribe();
      this.buffer.length = 0;
      this.wakeReader();
    }
    return Promise.resolve();
  }

  private wakeReader(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}

function subjectMessage(message: Msg): SubjectMessage {
  const headers: Record<string, string> = {};
  for (const name of message.headers?.keys() ?? []) headers[name] = message.headers!.get(name);
  return {
    subject: message.subject,
    payload: message.data,
    headers,
    traceContext: (base?: Context) => extractTraceContext(message.headers, base),
  };
}
