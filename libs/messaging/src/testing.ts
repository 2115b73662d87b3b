import { FailedPreconditionError } from '@loom/foundation';
import { type MessagingSettings } from './settings.js';
import { type Delivery, type SourceConsumer } from './source-consumer.js';

/** What a test changes of the settings below. */
export interface TestMessagingOverrides {
  readonly stream?: Partial<MessagingSettings['stream']>;
  readonly consumer?: Partial<MessagingSettings['consumer']>;
}

/**
 * Messaging settings for a test's nats-server at `serverUrl`: a 16 MiB stream, the rest as loom's defaults, and a
 * publish cut off by the server's restart retried after 2 s.
 */
export function testMessagingSettings(serverUrl: string, overrides: TestMessagingOverrides = {}): MessagingSettings {
  return {
    servers: [serverUrl],
    requestTimeoutMs: 2000,
    stream: { replicas: 1, maxAgeMs: 0, maxBytes: 16 * 1024 * 1024, duplicateWindowMs: 120_000, ...overrides.stream },
    consumer: { ackWaitMs: 30_000, maxDeliver: 10, maxAckPending: 1000, ...overrides.consumer },
  };
}

/** Reads a consumer's deliveries one at a time; throws once the consumer ended. */
export function deliveryReader(consumer: SourceConsumer): () => Promise<Delivery> {
  const iterator = consumer[Symbol.asyncIterator]();
  return async () => {
    const next = await iterator.next();
    if (next.done === true) throw new FailedPreconditionError('the consumer ended');
    return next.value;
  };
}
