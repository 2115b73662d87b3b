export * from './errors.js';
export { type Delivery, MESSAGE_ID_HEADER, type Settlement, SourceConsumer } from './source-consumer.js';
export {
  type ConnectMessagingOptions,
  connectMessaging,
  type ConsumeOptions,
  type KeyValueOptions,
  Messaging,
  type PublishOptions,
  type PublishResult,
} from './messaging.js';
export { ATTR_WORKFLOW, createMessagingMetrics, type MessagingMetrics, noMessagingMetrics, type PendingSource } from './metrics.js';
export { jetStreamToken, keptStreamName, sourceConsumerName, sourceSubject, streamName } from './names.js';
export { keptStreamConfig, REPLAYED_FROM_HEADER, type ReplayResult, type ReplayStart } from './kept-messages.js';
export { type ConsumerSettings, messagingSettings, type MessagingSettings, type StreamSettings } from './settings.js';
export { extractTraceContext, injectTraceContext, messageHeaders } from './trace-context.js';
export { type NatsConnectionSettings } from './nats-connection.js';
export {
  connectNats,
  type ConnectNatsOptions,
  type DeliverPolicyName,
  NatsConnector,
  type StreamConsumerOptions,
  type SubjectPublishOptions,
} from './nats-connector.js';
export { type SubjectMessage, SubjectSubscription } from './subject-subscription.js';
export { Lease, LEASE_BUCKET, type LeaseOptions, type LeaseState } from './lease.js';
export { type CreateOutcome, type KeyEntry } from './key-creates.js';
export { type KV, type KvEntry, KvWatchInclude } from 'nats';
