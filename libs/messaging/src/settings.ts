import { type LoomConfig } from '@loom/config';
import { type NatsConnectionSettings } from './nats-connection.js';

/** How loom connects to NATS (servers, credentials, TLS) and shapes its streams and consumers (from `loom.messaging.*`). */
export interface MessagingSettings extends NatsConnectionSettings {
  readonly stream: StreamSettings;
  readonly consumer: ConsumerSettings;
}

/** The limits of each workflow's stream. */
export interface StreamSettings {
  readonly replicas: number;
  /** 0: no limit. */
  readonly maxAgeMs: number;
  readonly maxBytes: number;
  /** A limit on the number of messages too (tests make tiny streams with it); default none. */
  readonly maxMessages?: number;
  readonly duplicateWindowMs: number;
  /** How long processed messages are kept for replay in the workflow's kept stream, in ms; 0 or absent: none are. */
  readonly keepProcessedMs?: number;
}

/** The settings of each source's durable consumer. */
export interface ConsumerSettings {
  readonly ackWaitMs: number;
  readonly maxDeliver: number;
  readonly maxAckPending: number;
}

/**
 * The messaging settings of a configuration, or undefined when `loom.messaging.nats.servers` is unset: loom then keeps
 * its messages in memory, as it did before it had messaging.
 */
export function messagingSettings(messaging: LoomConfig['messaging']): MessagingSettings | undefined {
  const { nats, stream, consumer } = messaging;
  if (nats.servers === undefined) return undefined;
  const tls = nats.tls.ca === undefined && nats.tls.cert === undefined ? undefined : { ...nats.tls };
  return {
    servers: nats.servers,
    ...(nats.token === undefined ? {} : { token: nats.token }),
    ...(nats.credentials === undefined ? {} : { credentials: nats.credentials }),
    ...(tls === undefined ? {} : { tls }),
    stream: { ...stream },
    consumer: { ...consumer },
  };
}
