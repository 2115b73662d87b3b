import { integer, natsCredentials, natsUrls, nonEmptyString, optional, pem } from './value-schemas.js';

/**
 * The keys of durable messaging on NATS JetStream (`loom.messaging.*`), part of the key table (config-keys.ts spreads
 * them into it). Unset `loom.messaging.nats.servers` keeps messages in memory, as before; the secrets and PEM files
 * are usually given through `_FILE` variables.
 */
export const messagingKeys = {
  'loom.messaging.nats.servers': {
    description:
      'NATS servers with JetStream that keep every inlet message until it is processed (an acknowledgement then means stored); unset: messages are held in memory and lost with the process',
    default: undefined,
    defaultText: 'none (in-memory)',
    schema: optional(natsUrls()),
    expected: 'a comma-separated list of nats:// or tls:// URLs',
  },
  'loom.messaging.nats.token': {
    description: 'token loom presents to the NATS servers (or loom.messaging.nats.credentials)',
    default: undefined,
    defaultText: 'none',
    schema: optional(nonEmptyString()),
    expected: 'a token',
    secret: true,
  },
  'loom.messaging.nats.credentials': {
    description: 'content of the NATS user credentials (.creds) file loom connects with (or loom.messaging.nats.token)',
    default: undefined,
    defaultText: 'none',
    schema: optional(natsCredentials()),
    expected: 'the content of a .creds file: a NATS user JWT and a user nkey seed',
    secret: true,
  },
  'loom.messaging.nats.tls.ca': {
    description: "PEM certificates of the CAs that sign the NATS servers' certificates (unset: the system's CAs)",
    default: undefined,
    defaultText: 'none',
    schema: optional(pem('CERTIFICATE')),
    expected: 'PEM text of one or more certificates',
  },
  'loom.messaging.nats.tls.cert': {
    description: 'PEM client certificate loom presents to the NATS servers (with loom.messaging.nats.tls.key)',
    default: undefined,
    defaultText: 'none',
    schema: optional(pem('CERTIFICATE')),
    expected: 'PEM text of a certificate',
  },
  'loom.messaging.nats.tls.key': {
    description: 'PEM private key of loom.messaging.nats.tls.cert',
    default: undefined,
    defaultText: 'none',
    schema: optional(pem('PRIVATE KEY')),
    expected: 'PEM text of a private key',
    secret: true,
  },
  'loom.messaging.stream.replicas': {
    description: "copies JetStream keeps of each workflow's stream (3 or 5 in a NATS cluster survive the loss of one or two servers)",
    default: 1,
    schema: integer(1, 5),
    expected: 'an integer from 1 to 5',
  },
  'loom.messaging.stream.maxAgeMs': {
    description: "longest a message waits in a workflow's stream before JetStream drops it, processed or not, in ms (0: no limit)",
    default: 0,
    schema: integer(0),
    expected: 'an integer >= 0 (milliseconds)',
  },
  'loom.messaging.stream.maxBytes': {
    description: "size of a workflow's stream of messages not yet processed; a publish to a full stream is refused with RESOURCE_EXHAUSTED, nothing is dropped",
    default: 1024 * 1024 * 1024,
    schema: integer(1024),
    expected: 'a number of bytes, at least 1024',
  },
  'loom.messaging.stream.duplicateWindowMs': {
    description: 'how long JetStream remembers a message id: a publish retried with the same id within it is stored once and answered duplicate, in ms',
    default: 120_000,
    schema: integer(100, 86_400_000),
    expected: 'an integer from 100 to 86400000',
  },
  'loom.messaging.stream.keepProcessedMs': {
    description:
      "how long a workflow's processed messages are kept for `loom workflow replay`, in ms: each acknowledged message is copied to the workflow's kept stream (LOOM-KEPT_<workflow>), which drops it after this time (0: nothing is kept, replay is refused)",
    default: 0,
    schema: integer(0, 31_536_000_000),
    expected: 'an integer from 0 to 31536000000 (milliseconds, at most a year)',
  },
  'loom.messaging.consumer.ackWaitMs': {
    description: 'how long a delivered message may go unacknowledged (with no sign of progress) before JetStream delivers it again, in ms',
    default: 30_000,
    schema: integer(100, 3_600_000),
    expected: 'an integer from 100 to 3600000',
  },
  'loom.messaging.consumer.maxDeliver': {
    description: 'deliveries of one message after which JetStream gives up on it (a message that failed past max_retry is terminated before that)',
    default: 10,
    schema: integer(1, 1000),
    expected: 'an integer from 1 to 1000',
  },
  'loom.messaging.consumer.maxAckPending': {
    description: 'messages of one inlet delivered and not yet acknowledged at once, over all executors: the bound on work in flight',
    default: 1000,
    schema: integer(1, 1_000_000),
    expected: 'an integer from 1 to 1000000',
  },
  'loom.messaging.lease.timeMs': {
    description:
      'lease of a singleton source (timer, file reader, graph reader, NATS subscriber) in a cluster of executors, in ms: its holder renews it every third of it, and another executor takes the source over within it once the holder is gone; also how long a gone executor stays in workflow status',
    default: 10_000,
    schema: integer(300, 600_000),
    expected: 'an integer from 300 to 600000 (milliseconds)',
  },
};
