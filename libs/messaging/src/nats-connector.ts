import { type Context } from '@opentelemetry/api';
import { type NATS_DELIVER_POLICIES } from '@loom/domain';
import { Lifecycle, ShutdownOnce } from '@loom/foundation';
import {
  AckPolicy,
  connect,
  type ConsumerConfig,
  DeliverPolicy,
  type JetStreamClient,
  type JetStreamManager,
  nanos,
  type NatsConnection,
  NatsError,
} from 'nats';
import { MessagingClosedError } from './errors.js';
import { publishToJetStream } from './jetstream-publish.js';
import { type PublishOptions, type PublishResult } from './messaging.js';
import { noMessagingMetrics } from './metrics.js';
import { DEFAULT_REQUEST_TIMEOUT_MS, natsConnectionOptions, type NatsConnectionSettings } from './nats-connection.js';
import { isNoResponders, JetStreamCode, jetStreamCode, messagingError, type Operation } from './nats-errors.js';
import { SourceConsumer } from './source-consumer.js';
import { SubjectSubscription } from './subject-subscription.js';
import { messageHeaders } from './trace-context.js';

/** Where a new durable consumer starts in its stream (JetStream's deliver policy; the catalog's NATS_DELIVER_POLICIES). */
export type DeliverPolicyName = (typeof NATS_DELIVER_POLICIES)[number];

const DELIVER_POLICY: Readonly<Record<DeliverPolicyName, DeliverPolicy>> = {
  all: DeliverPolicy.All,
  new: DeliverPolicy.New,
  last: DeliverPolicy.Last,
  last_per_subject: DeliverPolicy.LastPerSubject,
};

/** A durable consumer of an existing stream, made when missing (updated to these settings when it exists). */
export interface StreamConsumerOptions {
  readonly stream: string;
  /** The durable consumer's name; every client consuming with it shares its deliveries. */
  readonly durable: string;
  /** Only messages of this subject (wildcards allowed); default the whole stream. */
  readonly filterSubject?: string;
  readonly deliverPolicy: DeliverPolicyName;
  /** How long a delivery may stay unsettled before JetStream delivers it again. */
  readonly ackWaitMs: number;
  /** Deliveries of a message before JetStream gives up on it. */
  readonly maxDeliver: number;
  /** Unsettled deliveries at most (over every client of the consumer): what bounds memory. */
  readonly maxAckPending: number;
  /** Whose deliveries they are, for the names in errors (the workflow). */
  readonly owner: string;
}

/** Options of a publish to a core subject. */
export interface SubjectPublishOptions {
  readonly headers?: Readonly<Record<string, string>>;
  /** The trace context to send; default the active one. */
  readonly context?: Context;
}

/** Options of connectNats. */
export interface ConnectNatsOptions {
  /** The connection's name as the NATS servers show it. */
  readonly name: string;
}

type ConnectorState = 'open' | 'closing' | 'closed';

/** Messages of a core subject waiting for a slow reader, at most, unless subscribe says otherwise. */
const DEFAULT_MAX_BUFFERED = 10_000;

/** Messages a durable consumer's client fetches ahead of its reader, at most. */
const CONSUMER_BATCH = 64;

const CONNECTOR_TRANSITIONS = {
  open: ['closing'],
  closing: ['closed'],
  closed: [],
} as const satisfies Record<ConnectorState, readonly ConnectorState[]>;

/**
 * Connects to any NATS servers (not only loom's own messaging) for a connector component. A failure is typed as
 * connectMessaging's: MessagingUnavailableError, MessagingAuthenticationError; no secret in its message.
 */
export async function connectNats(settings: NatsConnectionSettings, options: ConnectNatsOptions): Promise<NatsConnector> {
  try {
    return new NatsConnector(await connect(natsConnectionOptions(settings, options.name)), settings.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS);
  } catch (error) {
    throw messagingError({ what: `connect to NATS at ${settings.servers.join(', ')}` }, error);
  }
}

/**
 * One connection of a NATS connector: core subjects (subscribe, publish) and JetStream streams (a durable consumer,
 * a publish answered once stored). JetStream is reached when first used, so a server without it serves core subjects.
 */
export class NatsConnector {
  private readonly lifecycle = new Lifecycle<ConnectorState>('the NATS connector', CONNECTOR_TRANSITIONS, 'open');
  private readonly closing = new ShutdownOnce(() => this.shutdown());
  private readonly stoppables = new Set<{ stop(): Promise<void> }>();
  private jetStream: Promise<{ manager: JetStreamManager; client: JetStreamClient }> | undefined;

  /** Made by connectNats. */
  constructor(
    private readonly connection: NatsConnection,
    private readonly timeoutMs: number,
  ) {}

  /** open, closing or closed. */
  get state(): ConnectorState {
    return this.lifecycle.state;
  }

  /**
   * The messages of a core subject (wildcards allowed); with `queue`, each message goes to one member of the group. At
   * most `maxBuffered` (default 10,000) wait for the reader; newer ones are dropped and counted (SubjectSubscription).
   */
  subscribe(subject: string, options: { readonly queue?: string; readonly maxBuffered?: number } = {}): SubjectSubscription {
    const what = `subscribe to subject '${subject}'`;
    this.checkOpen(what);
    try {
      const subjectSubscription = new SubjectSubscription(subject, options.maxBuffered ?? DEFAULT_MAX_BUFFERED);
      const subscription = this.connection.subscribe(subject, {
        ...(options.queue === undefined ? {} : { queue: options.queue }),
        callback: (error, message) =>
          error === null ? subjectSubscription.receive(message) : subjectSubscription.end(messagingError({ what, subject }, error)),
      });
      subjectSubscription.bind(subscription);
      this.stoppables.add(subjectSubscription);
      return subjectSubscription;
    } catch (error) {
      throw messagingError({ what, subject }, error);
    }
  }

  /** The deliveries of a durable consumer of an existing stream (a missing stream: JetStreamRequestError, code 10059). */
  async consumeStream(options: StreamConsumerOptions): Promise<SourceConsumer> {
    const what = `consume stream '${options.stream}' through durable consumer '${options.durable}'`;
    this.checkOpen(what);
    const config: Partial<ConsumerConfig> = {
      durable_name: options.durable,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DELIVER_POLICY[options.deliverPolicy],
      ack_wait: nanos(options.ackWaitMs),
      max_deliver: options.maxDeliver,
      max_ack_pending: options.maxAckPending,
      ...(options.filterSubject === undefined ? {} : { filter_subject: options.filterSubject }),
    };
    try {
      const { manager, client } = await this.jetStreamOf();
      await manager.consumers.add(options.stream, config).catch(async (error: unknown) => {
        // it exists with other settings: take the new ones (JetStream refuses a change it cannot make, such as the deliver policy)
        if (jetStreamCode(error) !== JetStreamCode.consumerExists) throw error;
        await manager.consumers.update(options.stream, options.durable, config);
      });
      const consumer = await client.consumers.get(options.stream, options.durable);
      const messages = await consumer.consume({ max_messages: Math.min(CONSUMER_BATCH, options.maxAckPending) });
      const sourceConsumer = new SourceConsumer(messages, options.owner, options.durable, options.maxDeliver, noMessagingMetrics);
      this.stoppables.add(sourceConsumer);
      return sourceConsumer;
    } catch (error) {
      throw messagingError({ what }, error);
    }
  }

  /** Publishes to a core subject (at most once: nobody confirms it); flush() to know the server has it. */
  publish(subject: string, payload: Uint8Array, options: SubjectPublishOptions = {}): void {
    const what = `publish to subject '${subject}'`;
    this.checkOpen(what);
    try {
      this.connection.publish(subject, payload, { headers: messageHeaders(options.headers, options.context) });
    } catch (error) {
      throw messagingError({ what, subject }, error);
    }
  }

  /** Resolves once the server has received everything published before it. */
  async flush(): Promise<void> {
    this.checkOpen('flush');
    await this.connection.flush().catch((error: unknown) => {
      throw messagingError({ what: 'flush the NATS connection' }, error);
    });
  }

  /**
   * Publishes to a subject a JetStream stream takes; resolves once stored. A full stream is a SubjectStreamFullError
   * (retryable), a subject no stream takes a JetStreamRequestError, no answer in time MessagingUnavailableError.
   */
  async publishToStream(subject: string, payload: Uint8Array, options: PublishOptions = {}): Promise<PublishResult> {
    const operation: Operation = { what: `publish to the stream of subject '${subject}'`, subject };
    this.checkOpen(operation.what);
    try {
      const { client } = await this.jetStreamOf();
      const ack = await publishToJetStream(client, subject, payload, messageHeaders(options.headers, options.context), options.messageId);
      return { sequence: ack.seq, duplicate: ack.duplicate };
    } catch (error) {
      throw messagingError(operation, error);
    }
  }

  /** The stream that takes a subject, or undefined when none does (or the server has no JetStream). */
  async streamOfSubject(subject: string): Promise<string | undefined> {
    const what = `find the stream of subject '${subject}'`;
    this.checkOpen(what);
    try {
      const { manager } = await this.jetStreamOf();
      return await manager.streams.find(subject);
    } catch (error) {
      // a server without JetStream has no responders; streams.find answers "no stream matches subject" as a plain Error
      if (!(error instanceof NatsError) || isNoResponders(error)) return undefined;
      throw messagingError({ what }, error);
    }
  }

  /** Stops every subscription and consumer and drains the connection; a second call waits for the first. */
  close(): Promise<void> {
    return this.closing.call();
  }

  private async shutdown(): Promise<void> {
    this.lifecycle.to('closing');
    try {
      await Promise.all([...this.stoppables].map((stoppable) => stoppable.stop()));
      await this.connection.drain().catch(() => this.connection.close());
    } finally {
      this.lifecycle.to('closed');
    }
  }

  private jetStreamOf(): Promise<{ manager: JetStreamManager; client: JetStreamClient }> {
    this.jetStream ??= this.connection.jetstreamManager({ timeout: this.timeoutMs }).then(
      (manager) => ({ manager, client: this.connection.jetstream({ timeout: this.timeoutMs }) }),
      (error: unknown) => {
        // asked again next time: JetStream may be enabled later
        this.jetStream = undefined;
        throw error;
      },
    );
    return this.jetStream;
  }

  private checkOpen(operation: string): void {
    if (!this.lifecycle.is('open')) throw new MessagingClosedError(operation);
  }
}
