import { randomUUID } from 'node:crypto';
import { NATS_DELIVER_POLICIES, NATS_NON_JSON_HANDLING, UnavailableError, ValidationError } from '@loom/domain';
import { IllegalTransitionError, Lifecycle, ShutdownOnce, type TransitionTable } from '@loom/foundation';
import {
  connectNats,
  type DeliverPolicyName,
  type Delivery,
  jetStreamToken,
  MESSAGE_ID_HEADER,
  type NatsConnectionSettings,
  type NatsConnector,
  type SourceConsumer,
  type SubjectSubscription,
} from '@loom/messaging';
import { type ComponentContext, type ComponentFactory, type Emit, type LoomMessage, type SignalSource, type Source } from '../runtime/component.js';
import { natsConnectionName, natsConnectionSettings } from './nats-settings.js';

/**
 * Messages of a core subject held while the workflow is behind; newer ones are dropped (core NATS is at most once) and
 * counted in a warning, so a slow workflow never grows the process without bound.
 */
export const NATS_SUBSCRIBER_MAX_BUFFERED = 10_000;

/** A NATS subscriber's subscription or consumer ended while the workflow ran: the run fails with it. */
export class NatsSourceEndedError extends UnavailableError {}

/** How long JetStream waits before delivering again a message the running workflow did not accept. */
const REFUSED_REDELIVERY_DELAY_MS = 1000;

/** What the subscriber reads: a core subject, or a JetStream stream through a durable consumer. */
type Reading =
  | { readonly mode: 'subject'; readonly subject: string; readonly queue: string | undefined }
  | {
      readonly mode: 'stream';
      readonly stream: string;
      readonly subject: string;
      readonly durable: string;
      readonly deliverPolicy: DeliverPolicyName;
      readonly ackWaitMs: number;
      readonly maxDeliver: number;
      readonly maxAckPending: number;
    };

/** A payload as a loom message body, or why it is refused. */
type Body = { readonly ok: true; readonly body: Record<string, unknown> } | { readonly ok: false; readonly reason: string };

/**
 * A source of NATS messages: a core subject (optionally in a queue group; at most once), or with `stream` a JetStream
 * stream through a durable consumer, each message acknowledged only once the workflow took it (see acknowledgeTaken).
 * A payload is the message's JSON object body; one that is not a JSON object is wrapped as `{ data: <text> }`
 * (`non_json: wrap`) or refused (`refuse`: dropped with a warning, a JetStream message terminated). NATS headers become
 * message headers (names lower-cased; `traceparent` carries the publisher's trace on), `Nats-Msg-Id` the message's id.
 */
export const natsSubscriberFactory: ComponentFactory = {
  kind: 'source',
  // a bad option rejects the promise rather than throwing from create
  create: (context) => new Promise<Source>((resolve) => resolve(natsSubscriber(context))),
};

function natsSubscriber(context: ComponentContext): NatsSubscriberSource {
  const field = (name: string): string => `${context.name}.options.${name}`;
  const settings = natsConnectionSettings(context);
  const subject = context.options.string('subject').trim();
  if (subject === '') throw ValidationError.of(field('subject'), 'is required', 'MISSING_OPTION');
  const nonJson = context.options.string('non_json');
  if (!(NATS_NON_JSON_HANDLING as readonly string[]).includes(nonJson)) {
    throw ValidationError.of(field('non_json'), `must be one of: ${NATS_NON_JSON_HANDLING.join(', ')}`, 'INVALID_VALUE');
  }
  const stream = context.options.optionalString('stream')?.trim();
  const queue = context.options.optionalString('queue_group')?.trim();
  if (stream === undefined || stream === '') {
    return new NatsSubscriberSource(context, settings, { mode: 'subject', subject, queue: queue === '' ? undefined : queue }, nonJson === 'wrap');
  }
  if (queue !== undefined && queue !== '') throw ValidationError.of(field('queue_group'), 'is for a core subject, not a stream', 'INVALID_VALUE');
  const deliverPolicy = context.options.string('deliver_policy');
  if (!isDeliverPolicy(deliverPolicy))
    throw ValidationError.of(field('deliver_policy'), `must be one of: ${NATS_DELIVER_POLICIES.join(', ')}`, 'INVALID_VALUE');
  const limit = (name: string): number => {
    const value = context.options.integer(name);
    if (value < 1) throw ValidationError.of(field(name), 'must be at least 1', 'OUT_OF_RANGE');
    return value;
  };
  const durable = context.options.optionalString('durable_name')?.trim() || `loom_${jetStreamToken(context.instance.name)}`;
  const reading: Reading = {
    mode: 'stream',
    stream,
    subject,
    durable,
    deliverPolicy,
    ackWaitMs: limit('ack_wait'),
    maxDeliver: limit('max_deliver'),
    maxAckPending: limit('max_ack_pending'),
  };
  return new NatsSubscriberSource(context, settings, reading, nonJson === 'wrap');
}

function isDeliverPolicy(value: string): value is DeliverPolicyName {
  return (NATS_DELIVER_POLICIES as readonly string[]).includes(value);
}

type SubscriberState = 'created' | 'starting' | 'running' | 'stopping' | 'stopped';

const SUBSCRIBER_TRANSITIONS: TransitionTable<SubscriberState> = {
  created: ['starting', 'stopped'],
  starting: ['running', 'stopping'],
  running: ['stopping'],
  stopping: ['stopped'],
  stopped: [],
};

/** The NATS Subscriber source. */
export class NatsSubscriberSource implements Source {
  private readonly lifecycle = new Lifecycle<SubscriberState>('NATS subscriber', SUBSCRIBER_TRANSITIONS, 'created');
  private readonly stopOnce = new ShutdownOnce(() => this.shutdown());
  /** Aborted by stop(): withdraws a message still waiting for room downstream. */
  private readonly stopping = new AbortController();
  private connector: NatsConnector | undefined;
  private reader: SubjectSubscription | SourceConsumer | undefined;
  private reading: Promise<void> = Promise.resolve();
  private dropped = 0;

  constructor(
    private readonly context: ComponentContext,
    private readonly settings: NatsConnectionSettings,
    private readonly what: Reading,
    private readonly wrapNonJson: boolean,
  ) {}

  async start(emit: Emit): Promise<void> {
    if (!this.lifecycle.is('created')) throw new IllegalTransitionError('NATS subscriber', this.lifecycle.state, 'starting');
    this.lifecycle.to('starting');
    try {
      this.connector = await connectNats(this.settings, { name: natsConnectionName(this.context) });
      if (this.what.mode === 'subject') {
        const { subject, queue } = this.what;
        const subscription = this.connector.subscribe(subject, { maxBuffered: NATS_SUBSCRIBER_MAX_BUFFERED, ...(queue === undefined ? {} : { queue }) });
        // the server has the subscription once flushed: nothing published after start() resolves is missed
        await this.connector.flush();
        this.reader = subscription;
        this.reading = this.readUntilEnd(this.readSubject(subscription, emit));
      } else {
        const { stream, subject, durable, deliverPolicy, ackWaitMs, maxDeliver, maxAckPending } = this.what;
        const consumer = await this.connector.consumeStream({
          stream,
          durable,
          deliverPolicy,
          ackWaitMs,
          maxDeliver,
          maxAckPending,
          owner: this.context.workflowName,
          ...(subject === '>' ? {} : { filterSubject: subject }),
        });
        this.reader = consumer;
        this.reading = this.readUntilEnd(this.readStream(consumer, emit));
      }
      this.lifecycle.to('running');
    } catch (error) {
      await this.stop();
      throw error;
    }
  }

  /** Stops reading (a message waiting for room is withdrawn, and a JetStream one delivered again) and closes the connection. */
  stop(): Promise<void> {
    return this.stopOnce.call();
  }

  private async shutdown(): Promise<void> {
    if (this.lifecycle.is('created')) {
      this.lifecycle.to('stopped');
      return;
    }
    this.lifecycle.to('stopping');
    this.stopping.abort();
    try {
      await this.reader?.stop();
      await this.reading;
      await this.connector?.close();
    } finally {
      this.lifecycle.to('stopped');
    }
  }

  private withdrawal(): SignalSource {
    const sources = [this.context.signal, this.stopping.signal];
    return {
      get signal() {
        return AbortSignal.any(sources);
      },
    };
  }

  /** A reader that ends while the source runs (the server ended the subscription or the consumer) fails the run. */
  private readUntilEnd(reading: Promise<void>): Promise<void> {
    return reading.then(
      () => {
        if (this.lifecycle.is('running')) this.context.fail(new NatsSourceEndedError(`${this.context.name}: the NATS subscription ended`));
      },
      (error: unknown) => {
        if (this.lifecycle.is('running') || this.lifecycle.is('starting')) this.context.fail(error);
      },
    );
  }

  private async readSubject(subscription: SubjectSubscription, emit: Emit): Promise<void> {
    let dropped = 0;
    for await (const received of subscription) {
      if (subscription.dropped > dropped) {
        this.drop(received.subject, `more than ${NATS_SUBSCRIBER_MAX_BUFFERED} messages waited for the workflow`, subscription.dropped - dropped);
        dropped = subscription.dropped;
      }
      const body = this.bodyOf(received.payload);
      if (!body.ok) {
        this.drop(received.subject, body.reason, 1);
        continue;
      }
      try {
        await emit(this.messageOf(body.body, received.headers), this.withdrawal());
      } catch (error) {
        if (!this.lifecycle.is('running')) break;
        this.context.logger.warn({ component: this.context.name, subject: received.subject, err: error }, 'NATS message was not accepted');
      }
    }
  }

  private async readStream(consumer: SourceConsumer, emit: Emit): Promise<void> {
    for await (const delivery of consumer) {
      const body = this.bodyOf(delivery.payload);
      if (!body.ok) {
        delivery.term(body.reason);
        this.context.logger.warn({ component: this.context.name, sequence: delivery.sequence, reason: body.reason }, 'NATS message refused');
        continue;
      }
      try {
        await emit(this.messageOf(body.body, delivery.headers), this.withdrawal());
      } catch (error) {
        // withdrawn (the run stops): JetStream delivers it again at once, to this workflow's next start; refused while
        // running: again after a pause, so a refusal does not spin
        if (!this.lifecycle.is('running')) {
          delivery.nak();
          break;
        }
        delivery.nak(REFUSED_REDELIVERY_DELAY_MS);
        this.context.logger.warn({ component: this.context.name, sequence: delivery.sequence, err: error }, 'NATS message was not accepted');
        continue;
      }
      await this.acknowledgeTaken(delivery);
    }
  }

  /**
   * The one place a JetStream message is acknowledged: once emit resolved, i.e. the workflow's queues took it. When the
   * runtime tracks a message to its end (issue 34 point 3), this is where to wait for that instead.
   */
  private async acknowledgeTaken(delivery: Delivery): Promise<void> {
    try {
      await delivery.ackConfirmed();
    } catch (error) {
      // not confirmed: JetStream may deliver it again after its ack wait (a duplicate, never a loss)
      this.context.logger.warn({ component: this.context.name, sequence: delivery.sequence, err: error }, 'NATS acknowledgement not confirmed');
    }
  }

  private bodyOf(payload: Uint8Array): Body {
    const text = new TextDecoder().decode(payload);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) return { ok: true, body: parsed as Record<string, unknown> };
    if (this.wrapNonJson) return { ok: true, body: { data: text } };
    return { ok: false, reason: 'the payload is not a JSON object' };
  }

  private messageOf(body: Record<string, unknown>, natsHeaders: Readonly<Record<string, string>>): LoomMessage {
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(natsHeaders)) headers[name.toLowerCase()] = value;
    const id = natsHeaders[MESSAGE_ID_HEADER];
    return { id: id === undefined || id === '' ? randomUUID() : id, body, headers };
  }

  private drop(subject: string, reason: string, count: number): void {
    const before = this.dropped;
    this.dropped += count;
    // at the first drop and then once per thousand: a flood of drops must not flood the log too
    if (before === 0 || Math.floor(before / 1000) !== Math.floor(this.dropped / 1000)) {
      this.context.logger.warn({ component: this.context.name, subject, reason, dropped: this.dropped }, 'NATS messages dropped');
    }
  }
}
