import { ROOT_CONTEXT } from '@opentelemetry/api';
import { type Delivery, type Messaging, type SourceConsumer } from '@loom/messaging';
import { type Logger } from '@loom/telemetry';
import { type LoomMessage } from './component.js';
import { type Settlement } from './completion.js';

/** Headers JetStream adds or reads itself (`Nats-Msg-Id`, …): they stay out of a message's own headers. */
const NATS_HEADER_PREFIX = 'nats-';

/**
 * Messages a consumer fetches ahead of the run (never more than loom.messaging.consumer.maxAckPending): a run takes
 * deliveries faster in larger pulls, and they wait in the client no longer than in a processor's queue.
 */
const CONSUMER_BATCH = 256;

/** A third of the default ack wait (loom.messaging.consumer.ackWaitMs, 30 s). */
const DEFAULT_PROGRESS_EVERY_MS = 10_000;

/** How often a run with this ack wait tells JetStream its unfinished deliveries are still being worked on. */
export function progressInterval(ackWaitMs: number): number {
  return Math.max(50, Math.floor(ackWaitMs / 3));
}

/** What JetStream is told of a terminated message. */
const TERM_REASON = 'loom: failed past max_retry with no failure handler, or not a message';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * A run's durable messages (issue 34): every source's messages are stored in the workflow's JetStream stream (a subject
 * per source component) and come back through the source's durable consumer. A message's id is its JetStream message id
 * (a publish retried with it within the duplicate window is stored once), its body the stored payload (JSON), its
 * headers (the W3C `traceparent` among them) NATS headers.
 */
export class DurableMode {
  constructor(
    private readonly messaging: Messaging,
    /** The workflow whose stream this is. */
    readonly workflow: string,
    private readonly logger: Logger,
    /**
     * How often the run tells JetStream its unfinished deliveries are still being worked on; well under
     * `loom.messaging.consumer.ackWaitMs` (default a third of its default), so a message waiting behind a slow
     * component is not delivered again.
     */
    readonly progressEveryMs: number = DEFAULT_PROGRESS_EVERY_MS,
  ) {}

  /** Makes sure of the workflow's stream, with a subject and a durable consumer for each of these source components. */
  prepare(sources: readonly string[]): Promise<void> {
    return this.messaging.ensureWorkflowStream(this.workflow, sources);
  }

  /**
   * Stores a message of a source; resolves once JetStream stored it, with `duplicate` true when a message with the same
   * id was stored within the duplicate window (this one was not stored again). A full stream is a StreamFullError.
   */
  async store(source: string, message: LoomMessage): Promise<{ readonly duplicate: boolean }> {
    // the message's own traceparent travels as it is, not the context of whoever calls this
    const result = await this.messaging.publish(this.workflow, source, encoder.encode(JSON.stringify(message.body)), {
      messageId: message.id,
      headers: message.headers,
      context: ROOT_CONTEXT,
    });
    return { duplicate: result.duplicate };
  }

  /** The stored messages of a source through its durable consumer; stop() the consumer when done. */
  consume(source: string): Promise<SourceConsumer> {
    return this.messaging.consume(this.workflow, source, { batch: CONSUMER_BATCH });
  }

  /** How a delivery is settled: acknowledged, terminated (counted by the messaging metrics, and logged here) or nak'd. */
  settlementOf(delivery: Delivery, source: string): Settlement {
    return {
      ack: () => delivery.ack(),
      term: (reason) => {
        // the reason goes to the log, which is redacted; JetStream (its advisories) gets no component's error text
        delivery.term(TERM_REASON);
        this.logger.warn(
          { workflow: this.workflow, component: source, messageId: delivery.messageId, sequence: delivery.sequence, reason },
          'message terminated: a branch failed past max_retry with no failure handler; it will not be delivered again',
        );
      },
      nak: () => delivery.nak(),
      working: () => delivery.working(),
    };
  }
}

/** The message a delivery carries, or why it carries none (a payload that is not a JSON object). */
export function messageOf(delivery: Delivery): LoomMessage | string {
  let body: unknown;
  try {
    body = JSON.parse(decoder.decode(delivery.payload));
  } catch {
    return 'its payload is not valid JSON';
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return 'its payload is not a JSON object';
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(delivery.headers)) {
    if (!name.toLowerCase().startsWith(NATS_HEADER_PREFIX)) headers[name] = value;
  }
  return { id: delivery.messageId ?? `${delivery.workflow}:${delivery.sequence}`, body: body as Record<string, unknown>, headers };
}
