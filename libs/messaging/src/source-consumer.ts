import { type Context } from '@opentelemetry/api';
import { Lifecycle, ShutdownOnce } from '@loom/foundation';
import { type ConsumerMessages, type JsMsg } from 'nats';
import { decodeEnvelope, ENVELOPE_HEADER, ENVELOPE_VERSION, type EnvelopeMessage } from './envelope.js';
import { type EnvelopedSettlement, EnvelopeSettlement } from './envelope-settlement.js';
import { MessagingUnavailableError } from './errors.js';
import { REPLAYED_FROM_HEADER } from './kept-messages.js';
import { type MessagingMetrics } from './metrics.js';
import { type RecentIds } from './recent-ids.js';
import { extractRecordTraceContext, extractTraceContext } from './trace-context.js';

/** The JetStream header carrying a message's id (its de-duplication key). */
export const MESSAGE_ID_HEADER = 'Nats-Msg-Id';

/**
 * How long an envelope of a version this loom cannot read waits before it is delivered again: it was written by a newer
 * loom (an upgrade under way), which takes it; it is never terminated for its version.
 */
const UNKNOWN_VERSION_DELAY_MS = 10_000;

/**
 * How a delivery of a stored message is settled: the one spelling of JetStream's verbs, used by every consumer and by
 * the executor's runtime (its completion tickets). Settle a delivery once with ack, nak or term; working() may come
 * before, any number of times.
 */
export interface Settlement {
  /** Processed: JetStream removes it (fire and forget; lost with the connection, it is delivered again). */
  ack(): void;
  /** Not processed: deliver it again, after `delayMs` when given. */
  nak(delayMs?: number): void;
  /** Never deliver it again (it failed past its retries); counted as terminated. `reason` goes to JetStream's advisories. */
  term(reason?: string): void;
  /** Still being processed: restarts its ack wait, so it is not delivered again meanwhile. */
  working(): void;
}

/** One delivery of a stored message to this consumer; settle it once with ack, nak or term (see Settlement). */
export interface Delivery extends Settlement {
  readonly workflow: string;
  /** The source it was stored by: a source component of the workflow, or the durable consumer a connector reads. */
  readonly source: string;
  readonly payload: Uint8Array;
  /** The id it was published with, when it had one. */
  readonly messageId: string | undefined;
  /** Its sequence in the workflow's stream. */
  readonly sequence: number;
  /** 1 on the first delivery, more on each redelivery. */
  readonly deliveryCount: number;
  /** True when this is the last delivery JetStream will make (loom.messaging.consumer.maxDeliver). */
  readonly lastDelivery: boolean;
  /** Its headers, the first value of each. */
  readonly headers: Readonly<Record<string, string>>;
  /** The publisher's trace context (a span made with it as parent continues the publisher's trace). */
  traceContext(base?: Context): Context;
  /** Processed, and resolves once JetStream confirmed it (MessagingUnavailableError when it did not answer). */
  ackConfirmed(): Promise<void>;
}

type ConsumerState = 'consuming' | 'stopping' | 'stopped';

const CONSUMER_TRANSITIONS = {
  consuming: ['stopping'],
  stopping: ['stopped'],
  stopped: [],
} as const satisfies Record<ConsumerState, readonly ConsumerState[]>;

/**
 * The deliveries of one source through its durable consumer, as an async iterable. The client holds at most `batch`
 * messages it has not handed out, and JetStream delivers at most maxAckPending unacknowledged ones over all consumers
 * of the source: memory stays bounded however far the stream is ahead. stop() ends the iteration: the messages fetched
 * and not yet handed out are given back (nak), so they are delivered again at once; deliveries handed out and never
 * settled are delivered again after their ack wait.
 *
 * A batch envelope (envelope.ts) is handed out as its messages, in order, each a Delivery of its own whose settlement
 * counts towards the envelope's (envelope-settlement.ts): JetStream hears of it once all of them are settled. With
 * `recent` (the workflow's consumers), a message whose id this executor already took from another stored message
 * within the duplicate window is acknowledged at once and not handed out (recent-ids.ts).
 */
export class SourceConsumer implements AsyncIterable<Delivery> {
  private readonly lifecycle: Lifecycle<ConsumerState>;
  private readonly stopping = new ShutdownOnce(() => this.shutdown());

  constructor(
    private readonly messages: ConsumerMessages,
    readonly workflow: string,
    readonly source: string,
    private readonly maxDeliver: number,
    private readonly metrics: MessagingMetrics,
    /** Called with each delivery acknowledged: copies it to the workflow's kept stream when processed messages are kept. */
    private readonly keep?: (message: JsMsg) => void,
    /** The ids of the workflow's stream this executor stored or took: a message stored twice under one id enters once. */
    private readonly recent?: RecentIds,
  ) {
    this.lifecycle = new Lifecycle(`consumer of source '${source}' of workflow '${workflow}'`, CONSUMER_TRANSITIONS, 'consuming');
  }

  /** consuming, stopping or stopped. */
  get state(): ConsumerState {
    return this.lifecycle.state;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Delivery> {
    for await (const message of this.messages) {
      if (!this.lifecycle.is('consuming')) {
        // fetched but not handed out before stop(): given back at once, so JetStream delivers it again without waiting
        // for its ack wait (the iteration ends after the last one the client holds)
        message.nak();
        continue;
      }
      const version = message.headers?.get(ENVELOPE_HEADER) ?? '';
      if (version !== '') {
        yield* this.envelope(message, version);
        continue;
      }
      const delivery = this.delivery(message);
      if (this.repeated(delivery.messageId, message.seq)) {
        message.ack();
        continue;
      }
      yield delivery;
    }
  }

  /** Stops fetching and ends the iteration; a second call waits for the first. */
  stop(): Promise<void> {
    return this.stopping.call();
  }

  private shutdown(): Promise<void> {
    this.lifecycle.to('stopping');
    // stop, not close: close() also waits for the reader to finish iterating, which a reader that stopped reading never does
    this.messages.stop();
    this.lifecycle.to('stopped');
    return Promise.resolve();
  }

  /** The messages of a batch envelope, each settled towards the envelope's settlement. */
  private *envelope(message: JsMsg, version: string): Generator<Delivery> {
    if (version !== ENVELOPE_VERSION) {
      message.nak(UNKNOWN_VERSION_DELAY_MS);
      return;
    }
    let messages: EnvelopeMessage[];
    try {
      messages = decodeEnvelope(message.data);
    } catch {
      // bytes that do not read as an envelope: handed out as they are, its owner terminates them as no message
      yield this.delivery(message);
      return;
    }
    if (messages.length === 0) {
      message.ack();
      return;
    }
    const { workflow, source, metrics, keep } = this;
    const envelope = new EnvelopeSettlement(message, messages.length, `message batch ${message.seq} of workflow '${workflow}'`, (acknowledged) =>
      keep?.(acknowledged),
    );
    // a replayed envelope's messages take the replay's ids, as a replayed single message does (kept-messages.ts)
    const replayedFrom = message.headers?.get(REPLAYED_FROM_HEADER) ?? '';
    const deliveryCount = message.info.deliveryCount;
    const lastDelivery = deliveryCount >= this.maxDeliver;
    for (const enveloped of messages) {
      const settlement = envelope.settlement();
      if (!this.lifecycle.is('consuming')) {
        settlement.nak();
        continue;
      }
      const messageId = replayedFrom === '' ? enveloped.id : `${enveloped.id}:replay:${replayedFrom}`;
      if (this.repeated(messageId, message.seq)) {
        settlement.ack();
        continue;
      }
      if (deliveryCount > 1) metrics.redelivered(workflow);
      yield {
        workflow,
        source,
        payload: enveloped.payload,
        messageId,
        sequence: message.seq,
        deliveryCount,
        lastDelivery,
        headers: enveloped.headers,
        traceContext: (base?: Context) => extractRecordTraceContext(enveloped.headers, base),
        ...this.settlementOf(settlement, messageId),
      };
    }
  }

  /**
   * A Delivery's settlement verbs from its envelope's settlement: a term is counted, and a message settled for good is
   * not handed out again when its envelope comes back for another of its messages.
   */
  private settlementOf(settlement: EnvelopedSettlement, messageId: string): Pick<Delivery, 'ack' | 'ackConfirmed' | 'nak' | 'term' | 'working'> {
    const { recent, metrics, workflow } = this;
    return {
      ack: () => {
        recent?.finished(messageId);
        settlement.ack();
      },
      ackConfirmed: () => {
        recent?.finished(messageId);
        return settlement.ackConfirmed();
      },
      nak: settlement.nak,
      term: (reason?: string) => {
        recent?.finished(messageId);
        settlement.term(reason);
        metrics.terminated(workflow);
      },
      working: settlement.working,
    };
  }

  /** True when this executor already took `messageId` from another stored message within the duplicate window, or finished it. */
  private repeated(messageId: string | undefined, sequence: number): boolean {
    return messageId !== undefined && this.recent !== undefined && !this.recent.delivered(messageId, sequence);
  }

  private delivery(message: JsMsg): Delivery {
    const { workflow, source, metrics, keep } = this;
    const deliveryCount = message.info.deliveryCount;
    if (deliveryCount > 1) metrics.redelivered(workflow);
    const headers: Record<string, string> = {};
    for (const name of message.headers?.keys() ?? []) headers[name] = message.headers!.get(name);
    const messageId = headers[MESSAGE_ID_HEADER];
    return {
      workflow,
      source,
      payload: message.data,
      messageId,
      sequence: message.seq,
      deliveryCount,
      lastDelivery: deliveryCount >= this.maxDeliver,
      headers,
      traceContext: (base?: Context) => extractTraceContext(message.headers, base),
      ack: () => {
        message.ack();
        keep?.(message);
      },
      ackConfirmed: async () => {
        const confirmed = await message.ackAck().catch((error: unknown) => {
          throw new MessagingUnavailableError(`acknowledge message ${message.seq} of workflow '${workflow}'`, 'no confirmation', { cause: error });
        });
        if (!confirmed) throw new MessagingUnavailableError(`acknowledge message ${message.seq} of workflow '${workflow}'`, 'already settled or expired');
        keep?.(message);
      },
      nak: (delayMs?: number) => message.nak(delayMs),
      term: (reason?: string) => {
        message.term(reason);
        metrics.terminated(workflow);
      },
      working: () => message.working(),
    };
  }
}
