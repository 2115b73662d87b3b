import { connectMessaging, type Messaging } from '@loom/messaging';
import { natsServerBinary, type NatsTestServer, startNatsServer } from '@loom/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type StoredFailure } from '../src/failures/failure-store.js';
import { KvFailureStore } from '../src/failures/kv-failure-store.js';
import { durableSettings } from './durable.js';

const binary = natsServerBinary('executor failure store in JetStream');

function record(id: string, attempts = 1, failed = '2026-12-07T10:00:00.000Z'): StoredFailure {
  return {
    id,
    workflow: 'Failing kv',
    workflowVersion: 1,
    component: 'Check',
    instance: 'Check_1',
    failure: { kind: 'invalid-argument', retryable: false, message: 'refused' },
    attempts,
    firstFailed: failed,
    lastFailed: failed,
    messageId: `m-${id}`,
    message: { id: `m-${id}`, body: { n: id }, headers: {} },
  };
}

describe.skipIf(binary === undefined)('the JetStream failure store, on a real nats-server', () => {
  let server: NatsTestServer;
  let messaging: Messaging;
  beforeAll(async () => {
    server = await startNatsServer();
    messaging = await connectMessaging(durableSettings(server));
  });
  afterAll(async () => {
    await messaging?.close();
    await server?.stop();
  });

  it('creates a first failure in one write, merges a second one, and keeps a message failing again after its removal afresh', async () => {
    const store = new KvFailureStore(messaging, { maxBytes: 1_000_000, maxAgeMs: 0 });
    expect(await store.putMany([record('a'), record('b')])).toEqual(['kept', 'kept']);
    // failed again (a retry that failed): attempts added on, the first failure kept
    expect(await store.put(record('a', 2, '2026-12-07T11:00:00.000Z'))).toBe('kept');
    const merged = await store.get('Failing kv', 'a');
    expect([merged?.attempts, merged?.firstFailed, merged?.lastFailed]).toEqual([3, '2026-12-07T10:00:00.000Z', '2026-12-07T11:00:00.000Z']);
    // retried and finished (removed), then failing once more: a record of its own again
    expect(await store.remove('Failing kv', ['b'])).toBe(1);
    expect(await store.put(record('b', 1, '2026-12-07T12:00:00.000Z'))).toBe('kept');
    const again = await store.get('Failing kv', 'b');
    expect([again?.attempts, again?.firstFailed]).toEqual([1, '2026-12-07T12:00:00.000Z']);
    expect((await store.list('Failing kv')).map((kept) => [kept.id, kept.attempts]).sort()).toEqual([
      ['a', 3],
      ['b', 1],
    ]);
    await store.close();
  });

  it('answers full for a record past the bucket, and keeps the others', async () => {
    const store = new KvFailureStore(messaging, { maxBytes: 2_600, maxAgeMs: 0 });
    const big = (id: string): StoredFailure => ({ ...record(id), workflow: 'Full kv', message: { id, body: { text: 'x'.repeat(600) }, headers: {} } });
    expect(await store.putMany([big('a'), big('b')])).toEqual(['kept', 'kept']);
    expect(await store.put(big('c'))).toBe('full');
    expect((await store.list('Full kv')).map((kept) => kept.id).sort()).toEqual(['a', 'b']);
    await store.close();
  });
});
