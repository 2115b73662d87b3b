import { ROOT_CONTEXT } from '@opentelemetry/api';
import { type Delivery, type InletConsumer, type Messaging } from '@loom/messaging';
import { type Logger } from '@loom/telemetry';
import { type LoomMessage } from './component.js';
import { type Settlement } from './completion.js';

/** Headers JetStream adds or reads itself (`Nats-Msg-Id`, …): they stay out of a message's own headers. */
const NATS_HEADER_PREFIX = 'nats-';

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
  consume(source: string): Promise<InletConsumer> {
    return this.messaging.consume(this.workflow, source);
  }

  /** How a delivery is settled: acknowledged, terminated (counted by the messaging metrics, and logged here) or nak'd. */
  settlementOf(delivery: Delivery, source: string): Settlement {
    return {
      ack: () => delivery.ack(),
      term: (reason) => {
        delivery.term(reason);
        this.logger.warn(
          { workflow: this.workflow, component: source, messageId: delivery.messageId, sequence: delivery.sequence, reason },
          'message terminated: a branch failed past max_retry with no failure handler; it will not be delivered again',
        );
      },
      nak: () => delivery.nak(),
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
