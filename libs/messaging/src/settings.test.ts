import { loadConfig } from '@loom/config';
import { describe, expect, it } from 'vitest';
import { messagingSettings } from './settings.js';

describe('messagingSettings', () => {
  it('is undefined without servers: the in-memory mode', () => {
    expect(messagingSettings(loadConfig({ env: {} }).messaging)).toBeUndefined();
  });

  it('gathers the servers, the credentials and the stream and consumer settings', () => {
    const env = {
      LOOM_MESSAGING_NATS_SERVERS: 'nats://nats-0:4222,nats://nats-1:4222',
      LOOM_MESSAGING_NATS_TOKEN: 'token-for-nats',
      LOOM_MESSAGING_STREAM_REPLICAS: '3',
      LOOM_MESSAGING_CONSUMER_ACKWAITMS: '5000',
    };
    expect(messagingSettings(loadConfig({ env }).messaging)).toEqual({
      servers: ['nats://nats-0:4222', 'nats://nats-1:4222'],
      token: 'token-for-nats',
      stream: { replicas: 3, maxAgeMs: 0, maxBytes: 1024 ** 3, duplicateWindowMs: 120_000, keepProcessedMs: 0 },
      consumer: { ackWaitMs: 5000, maxDeliver: 10, maxAckPending: 1000 },
    });
  });
});
