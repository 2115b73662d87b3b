import { type ConnectionOptions, credsAuthenticator } from 'nats';

/** Where and how a client reaches NATS: the servers, the credentials and TLS (loom's messaging and the NATS connectors share it). */
export interface NatsConnectionSettings {
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
  /** How long a JetStream request (a publish's acknowledgement, a stream change) may take; default 10 s. */
  readonly requestTimeoutMs?: number;
}

/** A request's time limit when the settings give none. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;

/** The client's connection options from the settings (credentials and TLS included). */
export function natsConnectionOptions(settings: NatsConnectionSettings, name: string): ConnectionOptions {
  const { tls, token, credentials } = settings;
  const anyTls = tls !== undefined || settings.servers.some((server) => server.startsWith('tls://'));
  return {
    servers: [...settings.servers],
    name,
    ...(token === undefined ? {} : { token }),
    ...(credentials === undefined ? {} : { authenticator: credsAuthenticator(new TextEncoder().encode(credentials)) }),
    ...(anyTls ? { tls: { ...(tls?.ca === undefined ? {} : { ca: tls.ca }), ...(tls?.cert === undefined ? {} : { cert: tls.cert, key: tls.key }) } } : {}),
    timeout: settings.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
    // a server restart or a leader change is waited out, never the end of the connection
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
    // every JetStream publish is a request, and the client otherwise makes an Error per request for the trace of a timeout
    // that seldom comes (about a tenth of loom's CPU in durable PublishStream); loom's typed errors name the operation
    noAsyncTraces: true,
  };
}
