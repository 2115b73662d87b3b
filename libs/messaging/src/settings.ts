import { type LoomConfig } from '@loom/config';

/** How loom connects to NATS and shapes its streams and consumers (from `loom.messaging.*`). */
export interface MessagingSettings {
  /** nats:// or tls:// URLs of the servers (any one will do; the client learns the rest of a cluster). */
  readonly servers: readonly string[];
  readonly token?: string;
  /** The content of a .creds file (user JWT and nkey seed). */
  readonly credentials?: string;
  readonly tls?: {
    /** PEM CA certificates for the servers' certificates. */
    readonly ca?: string;
    /** PEM client certificate and its key (both or none). */
    readonly cert?: string;
    readonly key?: string;
  };
  readonly stream: StreamSettings;
  readonly consumer: ConsumerSettings;
  /** How long a JetStream request (a publish's acknowledgement, a stream change) may take; default 10 s. */
  readonly requestTimeoutMs?: number;
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
}

/** The settings of each inlet's durable consumer. */
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
