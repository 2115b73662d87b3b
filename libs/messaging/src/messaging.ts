import { type Context } from '@opentelemetry/api';
import { Lifecycle, ShutdownOnce } from '@loom/foundation';
import {
  AckPolicy,
  connect,
  type ConsumerConfig,
  DeliverPolicy,
  DiscardPolicy,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  type KV,
  nanos,
  type NatsConnection,
  RetentionPolicy,
  StorageType,
  type StreamConfig,
} from 'nats';
import { EnvelopePublisher } from './envelope-publisher.js';
import { MessagingClosedError, MessagingUnavailableError, NothingKeptError, ReplayOutOfRangeError } from './errors.js';
import { publishToJetStream } from './jetstream-publish.js';
import { type CreateOutcome, KeyCreates, type KeyEntry } from './key-creates.js';
import { ensureKeptStream, REPLAYED_FROM_HEADER, replayKept, type ReplayResult, type ReplayStart } from './kept-messages.js';
import { type MessagingMetrics, noMessagingMetrics } from './metrics.js';
import { keptStreamName, keptSubjectOf, sourceConsumerName, sourceSubject, streamName } from './names.js';
import { isNoResponders, JetStreamCode, jetStreamCode, messagingError, type Operation } from './nats-errors.js';
import { DEFAULT_REQUEST_TIMEOUT_MS, natsConnectionOptions } from './nats-connection.js';
import { type MessagingSettings } from './settings.js';
import { RecentIds } from './recent-ids.js';
import { SourceConsumer } from './source-consumer.js';
import { messageHeaders, recordHeaders } from './trace-context.js';

/** Options of a publish. */
export interface PublishOptions {
  /** The message's id: a publish retried with it within the duplicate window is stored once (`duplicate: true`). */
  readonly messageId?: string;
  /** Headers to send with it (the trace context is added). */
  readonly headers?: Readonly<Record<string, string>>;
  /** The trace context to send; default the active one. */
  readonly context?: Context;
  /**
   * True when loom made the id up for this publish (its caller chose none): it cannot come again, so it is not looked
   * up among, nor added to, the ids remembered for de-duplication (recent-ids.ts).
   */
  readonly generatedId?: boolean;
}

/** What JetStream answered a publish: the message is stored. */
export interface PublishResult {
  /** Its sequence in the workflow's stream (the first one's, for a duplicate). */
  readonly sequence: number;
  /** True when a message with the same id was stored within the duplicate window: this one was not stored again. */
  readonly duplicate: boolean;
}

/** Options of consume. */
export interface ConsumeOptions {
  /** Messages the client fetches ahead of the reader; default 64 (never more than maxAckPending). */
  readonly batch?: number;
}

/** Options of keyValue. */
export interface KeyValueOptions {
  /** How long each value lives unless written again, in ms (the bucket's max_age); default: for ever. */
  readonly ttlMs?: number;
  /** Most bytes the bucket holds (its stream's max_bytes): a put past it is refused (discard new); default: no limit. */
  readonly maxBytes?: number;
}

/** Options of connectMessaging. */
export interface ConnectMessagingOptions {
  readonly metrics?: MessagingMetrics;
  /** The connection's name as the NATS servers show it; default `loom`. */
  readonly name?: string;
}

type MessagingState = 'open' | 'closing' | 'closed';

const MESSAGING_TRANSITIONS = {
  open: ['closing'],
  closing: ['closed'],
  closed: [],
} as const satisfies Record<MessagingState, readonly MessagingState[]>;

const DEFAULT_BATCH = 64;
/** NATS's default max_payload, for a connection that has not heard the server's yet. */
const DEFAULT_MAX_PAYLOAD = 1024 * 1024;

/**
 * Connects to the NATS servers of the settings. A failure is typed: MessagingUnavailableError (no server answered),
 * MessagingAuthenticationError (credentials refused); its message names no secret.
 */
export async function connectMessaging(settings: MessagingSettings, options: ConnectMessagingOptions = {}): Promise<Messaging> {
  const operation = { what: `connect to NATS at ${settings.servers.join(', ')}` };
  try {
    const connection = await connect(natsConnectionOptions(settings, options.name ?? 'loom'));
    const timeout = settings.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    const manager = await connection.jetstreamManager({ timeout }).catch(async (error: unknown) => {
      await connection.close();
      throw error;
    });
    return new Messaging(connection, manager, connection.jetstream({ timeout }), settings, options.metrics ?? noMessagingMetrics);
  } catch (error) {
    throw messagingError(operation, error);
  }
}

/**
 * loom's messages on NATS JetStream: per workflow a stream (one subject per source component, kept until processed), a
 * publish answered once JetStream stored the message, and per source one durable consumer every executor shares.
 */
export class Messaging {
  private readonly lifecycle = new Lifecycle<MessagingState>('the messaging connection', MESSAGING_TRANSITIONS, 'open');
  private readonly closing = new ShutdownOnce(() => this.shutdown());
  private readonly consumers = new Set<SourceConsumer>();
  /** Workflows whose stream this connection made sure of, for pendingByWorkflow. */
  private readonly workflows = new Set<string>();
  /** Per workflow, the message ids this connection stored or was delivered within the duplicate window (recent-ids.ts). */
  private readonly recentIds = new Map<string, RecentIds>();
  private readonly envelopes: EnvelopePublisher;
  /** Each source's subject by workflow and source: a name that must be hashed (jetStreamToken) is hashed once. */
  private readonly subjects = new Map<string, Map<string, string>>();
  /** Made at the first createKeys. */
  private keyCreates: KeyCreates | undefined;

  /** Made by connectMessaging. */
  constructor(
    private readonly connection: NatsConnection,
    private readonly manager: JetStreamManager,
    private readonly client: JetStreamClient,
    private readonly settings: MessagingSettings,
    private readonly metrics: MessagingMetrics,
  ) {
    this.envelopes = new EnvelopePublisher({
      client,
      maxPayload: () => connection.info?.max_payload ?? DEFAULT_MAX_PAYLOAD,
      recentIds: (workflow) => this.recentIdsOf(workflow),
      stored: (workflow, count) => metrics.stored(workflow, count),
      failure: (workflow, source, error) => messagingError({ what: `publish to source '${source}' of workflow '${workflow}'`, workflow, source }, error),
    });
  }

  /** open, closing or closed. */
  get state(): MessagingState {
    return this.lifecycle.state;
  }

  /**
   * Creates the workflow's stream, or updates it to these sources and the current settings, and the durable consumer of
   * each source; the same call again changes nothing. Several executors may call it at once.
   */
  async ensureWorkflowStream(workflow: string, sources: readonly string[]): Promise<void> {
    const operation = { what: `create the message stream of workflow '${workflow}'`, workflow };
    this.checkOpen(operation.what);
    const config = this.streamConfig(workflow, sources);
    try {
      const exists = await this.manager.streams.info(config.name).then(
        () => true,
        (error: unknown) => {
          if (jetStreamCode(error) === JetStreamCode.streamNotFound) return false;
          throw error;
        },
      );
      if (!exists) {
        // a stream made anew numbers its messages from 1 again: ids remembered of an earlier one no longer hold
        this.recentIds.delete(workflow);
        await this.manager.streams.add(config).catch(async (error: unknown) => {
          // another executor created it meanwhile, with other settings (an older version of the workflow)
          if (jetStreamCode(error) !== JetStreamCode.streamNameInUse) throw error;
          await this.manager.streams.update(config.name, config);
        });
      } else await this.manager.streams.update(config.name, config);
      for (const source of sources) await this.ensureSourceConsumer(workflow, source);
      if (this.keepProcessedMs > 0) await ensureKeptStream(this.manager, workflow, this.keepProcessedMs, this.settings.stream);
      this.workflows.add(workflow);
    } catch (error) {
      throw messagingError(operation, error);
    }
  }

  /** Deletes the workflow's stream with its messages and consumers; false when it had none. */
  async deleteWorkflowStream(workflow: string): Promise<boolean> {
    const operation = { what: `delete the message stream of workflow '${workflow}'`, workflow };
    this.checkOpen(operation.what);
    this.workflows.delete(workflow);
    this.recentIds.delete(workflow);
    try {
      // its kept messages go with it: there is nothing to replay them into
      await this.manager.streams.delete(keptStreamName(workflow)).catch((error: unknown) => {
        if (jetStreamCode(error) !== JetStreamCode.streamNotFound) throw error;
      });
      return await this.manager.streams.delete(streamName(workflow));
    } catch (error) {
      if (jetStreamCode(error) === JetStreamCode.streamNotFound) return false;
      throw messagingError(operation, error);
    }
  }

  /**
   * Publishes a message of a source of a workflow; resolves once JetStream has stored it. Messages with an id published
   * to one source in the same turn of the event loop are stored together as one batch envelope (envelope.ts); an id
   * this connection stored or was delivered within the duplicate window, or repeated in the batch, is answered
   * duplicate and not stored again (recent-ids.ts). A full stream is a
   * StreamFullError (resource-exhausted, retryable), a source without a stream StreamNotFoundError (once "no responders"
   * has been tried again for about 2 s: see jetstream-publish.ts), no answer in time
   * MessagingUnavailableError (retry with the same message id: it is stored once).
   */
  publish(workflow: string, source: string, payload: Uint8Array | string, options: PublishOptions = {}): Promise<PublishResult> {
    const operation = (): Operation => ({ what: `publish to source '${source}' of workflow '${workflow}'`, workflow, source });
    if (!this.lifecycle.is('open')) return Promise.reject(new MessagingClosedError(operation().what));
    const { messageId } = options;
    if (messageId === undefined || messageId === '') return this.publishSingle(workflow, source, payload, options, operation);
    // no async wrapper: this path runs once per message of every batch
    const headers = recordHeaders(options.headers, options.context);
    return this.envelopes.publish(workflow, source, this.subjectOf(workflow, source), messageId, headers, payload, options.generatedId !== true);
  }

  /** A message without an id, stored on its own as loom always stored them. */
  private async publishSingle(
    workflow: string,
    source: string,
    payload: Uint8Array | string,
    options: PublishOptions,
    operation: () => Operation,
  ): Promise<PublishResult> {
    try {
      const headers = messageHeaders(options.headers, options.context);
      const bytes = typeof payload === 'string' ? Buffer.from(payload, 'utf8') : payload;
      const ack = await publishToJetStream(this.client, this.subjectOf(workflow, source), bytes, headers, options.messageId);
      if (!ack.duplicate) this.metrics.stored(workflow, 1);
      return { sequence: ack.seq, duplicate: ack.duplicate };
    } catch (error) {
      throw messagingError(operation(), error);
    }
  }

  /** The deliveries of a source through its durable consumer (made when missing); stop() the consumer when done. */
  async consume(workflow: string, source: string, options: ConsumeOptions = {}): Promise<SourceConsumer> {
    const operation: Operation = { what: `consume source '${source}' of workflow '${workflow}'`, workflow, source };
    this.checkOpen(operation.what);
    const { maxAckPending, maxDeliver } = this.settings.consumer;
    try {
      await this.ensureSourceConsumer(workflow, source);
      const consumer = await this.client.consumers.get(streamName(workflow), sourceConsumerName(source));
      const messages = await consumer.consume({ max_messages: Math.min(options.batch ?? DEFAULT_BATCH, maxAckPending) });
      const keep = this.keepProcessedMs > 0 ? (message: JsMsg) => this.keepProcessed(message) : undefined;
      const sourceConsumer = new SourceConsumer(messages, workflow, source, maxDeliver, this.metrics, keep, this.recentIdsOf(workflow));
      this.consumers.add(sourceConsumer);
      return sourceConsumer;
    } catch (error) {
      throw messagingError(operation, error);
    }
  }

  /** How long processed messages are kept for replay (loom.messaging.stream.keepProcessedMs); 0: none are. */
  get keepProcessedMs(): number {
    return this.settings.stream.keepProcessedMs ?? 0;
  }

  /**
   * Publishes the workflow's kept processed messages (see kept-messages.ts) from `start` up to the last one kept now
   * into its stream again, each under its source's subject; the run takes them as any other message. Refused, nothing
   * sent, with NothingKeptError when this connection keeps none (naming the setting) and ReplayOutOfRangeError for a
   * start past what is kept.
   */
  async replay(workflow: string, start: ReplayStart): Promise<ReplayResult> {
    const operation = { what: `replay the kept messages of workflow '${workflow}'`, workflow };
    this.checkOpen(operation.what);
    const keep = this.keepProcessedMs;
    if (keep === 0) throw new NothingKeptError(workflow, 'loom.messaging.stream.keepProcessedMs is 0 (set it, in ms, to keep processed messages for a replay)');
    if ('sinceMs' in start && start.sinceMs > keep) {
      throw new ReplayOutOfRangeError(
        workflow,
        `${start.sinceMs} ms reaches past what is kept: processed messages are kept ${keep} ms (loom.messaging.stream.keepProcessedMs)`,
      );
    }
    try {
      const result = await replayKept(this.manager, this.client, workflow, start);
      this.metrics.stored(workflow, result.replayed);
      return result;
    } catch (error) {
      throw messagingError(operation, error);
    }
  }

  /**
   * A JetStream key-value bucket shared by every executor (the cluster's run state, leases, status), made when missing
   * with the stream replicas of the settings. A bucket that exists is used as it is.
   */
  async keyValue(bucket: string, options: KeyValueOptions = {}): Promise<KV> {
    const operation = { what: `open the key-value bucket '${bucket}'` };
    this.checkOpen(operation.what);
    try {
      return await this.client.views.kv(bucket, {
        history: 1,
        replicas: this.settings.stream.replicas,
        ...(options.ttlMs === undefined ? {} : { ttl: options.ttlMs }),
        ...(options.maxBytes === undefined ? {} : { max_bytes: options.maxBytes }),
        timeout: this.settings.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
      });
    } catch (error) {
      throw messagingError(operation, error);
    }
  }

  /**
   * Creates entries in a key-value bucket opened with keyValue, each only while its key holds nothing: answers each
   * one's outcome in order ('exists' for a key that holds a value or a delete marker: read and write it through the
   * bucket then), all sent in one turn and answered through one subscription (key-creates.ts). A time-out is a
   * MessagingUnavailableError, another refusal a JetStreamRequestError.
   */
  createKeys(bucket: string, entries: readonly KeyEntry[]): Promise<CreateOutcome[]> {
    this.checkOpen(`write to the key-value bucket '${bucket}'`);
    this.keyCreates ??= new KeyCreates(this.connection, this.settings.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS);
    return this.keyCreates.create(bucket, entries);
  }

  /**
   * Answers the core NATS requests on `subject` (not stored: a request nobody answers in time is lost) with what `answer`
   * resolves to; a rejected (or throwing) answer is not sent, so the requester times out. Resolves once the server
   * knows of the subscription; stops with the returned function or the connection.
   */
  async reply(subject: string, answer: (data: Uint8Array) => Promise<Uint8Array>): Promise<() => void> {
    const operation = { what: `answer requests on '${subject}'` };
    this.checkOpen(operation.what);
    const subscription = this.connection.subscribe(subject, {
      callback: (error, message) => {
        if (error !== null) return;
        // an answer that throws is one not sent, as a rejected one: nothing escapes into the client's callback
        Promise.resolve(message.data)
          .then(answer)
          .then(
            (data) => message.respond(data),
            () => undefined,
          );
      },
    });
    // a request sent from another connection right after finds the subscription
    await this.connection.flush().catch((error: unknown) => {
      subscription.unsubscribe();
      throw messagingError(operation, error);
    });
    return () => subscription.unsubscribe();
  }

  /** A core NATS request to the one that answers on `subject` (reply); MessagingUnavailableError when nobody answers within `timeoutMs`. */
  async request(subject: string, data: Uint8Array, timeoutMs = this.settings.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS): Promise<Uint8Array> {
    const operation = { what: `request on '${subject}'` };
    this.checkOpen(operation.what);
    try {
      return (await this.connection.request(subject, data, { timeout: timeoutMs })).data;
    } catch (error) {
      // a core subject, not JetStream's: nobody subscribed answers no one, which is not JetStream being off
      if (isNoResponders(error)) throw new MessagingUnavailableError(operation.what, 'nobody answers on it', { cause: error });
      throw messagingError(operation, error);
    }
  }

  /** Messages stored and not yet acknowledged, for each workflow whose stream this connection made sure of. */
  async pendingByWorkflow(): Promise<ReadonlyMap<string, number>> {
    const pending = new Map<string, number>();
    if (!this.lifecycle.is('open')) return pending;
    for (const workflow of this.workflows) {
      // a stream that cannot be read now is left out of this reading, not reported as empty
      const info = await this.manager.streams.info(streamName(workflow)).catch(() => undefined);
      if (info !== undefined) pending.set(workflow, info.state.messages);
    }
    return pending;
  }

  /** Stops every consumer and closes the connection (pending acknowledgements are flushed first); a second call waits for the first. */
  close(): Promise<void> {
    return this.closing.call();
  }

  private async shutdown(): Promise<void> {
    this.lifecycle.to('closing');
    try {
      await Promise.all([...this.consumers].map((consumer) => consumer.stop()));
      this.keyCreates?.close();
      await this.connection.drain().catch(() => this.connection.close());
    } finally {
      this.lifecycle.to('closed');
    }
  }

  /** Copies an acknowledged delivery to the workflow's kept stream: a core publish, nothing awaited (a copy lost with NATS is not replayable). */
  private keepProcessed(message: JsMsg): void {
    // a replayed message is not kept again: its original is, and a second replay (after a second fix) sends that
    if (message.headers?.has(REPLAYED_FROM_HEADER) === true) return;
    try {
      this.connection.publish(keptSubjectOf(message.subject), message.data, message.headers === undefined ? {} : { headers: message.headers });
    } catch {
      // a closed connection: the copy is lost, the acknowledgement stands
    }
  }

  private subjectOf(workflow: string, source: string): string {
    let sources = this.subjects.get(workflow);
    if (sources === undefined) {
      sources = new Map();
      this.subjects.set(workflow, sources);
    }
    let subject = sources.get(source);
    if (subject === undefined) {
      subject = sourceSubject(workflow, source);
      sources.set(source, subject);
    }
    return subject;
  }

  private recentIdsOf(workflow: string): RecentIds {
    let recent = this.recentIds.get(workflow);
    if (recent === undefined) {
      const { maxAgeMs, duplicateWindowMs } = this.settings.stream;
      recent = new RecentIds(maxAgeMs > 0 ? Math.min(duplicateWindowMs, maxAgeMs) : duplicateWindowMs);
      this.recentIds.set(workflow, recent);
    }
    return recent;
  }

  private checkOpen(operation: string): void {
    if (!this.lifecycle.is('open')) throw new MessagingClosedError(operation);
  }

  private streamConfig(workflow: string, sources: readonly string[]): StreamConfig {
    const { replicas, maxAgeMs, maxBytes, maxMessages, duplicateWindowMs } = this.settings.stream;
    // JetStream refuses a duplicate window longer than the stream's age limit
    const duplicateWindow = maxAgeMs > 0 ? Math.min(duplicateWindowMs, maxAgeMs) : duplicateWindowMs;
    return {
      name: streamName(workflow),
      subjects: sources.map((source) => sourceSubject(workflow, source)),
      // a message stays until a consumer acknowledges it; a full stream refuses new messages and drops none
      retention: RetentionPolicy.Workqueue,
      discard: DiscardPolicy.New,
      storage: StorageType.File,
      num_replicas: replicas,
      max_age: nanos(maxAgeMs),
      max_bytes: maxBytes,
      max_msgs: maxMessages ?? -1,
      duplicate_window: nanos(duplicateWindow),
    } as StreamConfig;
  }

  private async ensureSourceConsumer(workflow: string, source: string): Promise<void> {
    const { ackWaitMs, maxDeliver, maxAckPending } = this.settings.consumer;
    const config: Partial<ConsumerConfig> = {
      durable_name: sourceConsumerName(source),
      filter_subject: sourceSubject(workflow, source),
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      ack_wait: nanos(ackWaitMs),
      max_deliver: maxDeliver,
      max_ack_pending: maxAckPending,
    };
    const stream = streamName(workflow);
    await this.manager.consumers.add(stream, config).catch(async (error: unknown) => {
      // it exists with other settings (changed since it was made): take the new ones
      if (jetStreamCode(error) !== JetStreamCode.consumerExists) throw error;
      await this.manager.consumers.update(stream, config.durable_name!, config);
    });
  }
}
