import { type Context } from '@opentelemetry/api';
import { Lifecycle, ShutdownOnce } from '@loom/foundation';
import { type ConsumerMessages, type JsMsg } from 'nats';
import { ENVELOPE_HEADER, ENVELOPE_VERSION, EnvelopeFormatError } from './envelope.js';
import { envelopeDeliveries } from './enveloped-delivery.js';
import { MessagingUnavailableError } from './errors.js';
import { REPLAYED_FROM_HEADER } from './kept-messages.js';
export { type Delivery, MESSAGE_ID_HEADER, type Settlement } from './delivery.js';
import { type Delivery, MESSAGE_ID_HEADER } from './delivery.js';
import { type MessagingMetrics } from './metrics.js';
import { type RecentIds } from './recent-ids.js';
import { extractTraceContext } from './trace-context.js';

/**
 * How long an envelope of a version this loom cannot read waits before it is delivered again: it was written by a newer
 * loom (an upgrade under way), which takes it; it is never terminated for its version.
 */
const UNKNOWN_VERSION_DELAY_MS = 10_000;

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
    readonly maxDeliver: number,
    readonly metrics: MessagingMetrics,
    /** Called with each delivery acknowledged: copies it to the workflow's kept stream when processed messages are kept. */
    readonly keep?: (message: JsMsg) => void,
    /** The ids of the workflow's stream this executor stored or took: a message stored twice under one id enters once. */
    readonly recent?: RecentIds,
  ) {
    this.lifecycle = new Lifecycle(`consumer of source '${source}' of workflow '${workflow}'`, CONSUMER_TRANSITIONS, 'consuming');
  }

  /** consuming, stopping or stopped. */
  get state(): ConsumerState {
    return this.lifecycle.state;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Delivery> {
    for await (const deliveries of this.batches()) {
      for (const delivery of deliveries) {
        if (this.lifecycle.is('consuming')) yield delivery;
        // stopped while its batch was handed out: the rest go back with their envelope
        else delivery.nak();
      }
    }
  }

  /**
   * The deliveries as JetStream hands them over: a batch envelope's messages together, in order (a single message on
   * its own), so a reader takes a batch in one step. A reader that sees the consumer stopping part way through a batch
   * naks the rest (they go back with their envelope).
   */
  async *batches(): AsyncIterable<readonly Delivery[]> {
    for await (const message of this.messages) {
      if (!this.lifecycle.is('consuming')) {
        // fetched but not handed out before stop(): given back at once, so JetStream delivers it again without waiting
        // for its ack wait (the iteration ends after the last one the client holds)
        message.nak();
        continue;
      }
      const version = message.headers?.get(ENVELOPE_HEADER) ?? '';
      if (version !== '') {
        const deliveries = this.envelope(message, version);
        if (deliveries.length > 0) yield deliveries;
        continue;
      }
      const delivery = this.delivery(message);
      if (this.repeated(delivery.messageId, message.seq)) {
        message.ack();
        continue;
      }
      yield [delivery];
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

  /** The messages of a batch envelope, each settled towards the envelope's settlement (enveloped-delivery.ts). */
  private envelope(message: JsMsg, version: string): readonly Delivery[] {
    if (version !== ENVELOPE_VERSION) {
      message.nak(UNKNOWN_VERSION_DELAY_MS);
      return [];
    }
    // a replayed envelope's messages take the replay's ids, as a replayed single message does (kept-messages.ts)
    const replayedFrom = message.headers?.get(REPLAYED_FROM_HEADER) ?? '';
    try {
      return envelopeDeliveries(message, this, replayedFrom);
    } catch (error) {
      if (!(error instanceof EnvelopeFormatError)) throw error;
      // bytes that do not read as an envelope: handed out as they are, its owner terminates them as no message
      return [this.delivery(message)];
    }
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
      text: () => message.string(),
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
