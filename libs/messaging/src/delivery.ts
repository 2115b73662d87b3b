import { type Context } from '@opentelemetry/api';

/** The JetStream header carrying a message's id (its de-duplication key). */
export const MESSAGE_ID_HEADER = 'Nats-Msg-Id';

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
  /** Its payload as UTF-8 text (without a copy of its bytes, for a message of a batch envelope). */
  text(): string;
}
