import { natsServerBinary, type NatsTestServer, startNatsServer } from '@loom/testing';
import { connect, type JetStreamManager, type NatsConnection } from 'nats';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connectMessaging, keptStreamName, type Messaging, NothingKeptError, REPLAYED_FROM_HEADER, ReplayOutOfRangeError } from '../src/index.js';
import { deliveryReader as reader, testMessagingSettings, type TestMessagingOverrides } from '../src/testing.js';

/** Issue 50: processed messages kept for replay beside each workflow's work-queue stream, and replayed into it. */
const binary = natsServerBinary('kept messages (libs/messaging/test/kept-messages.test.ts)');
const text = (value: string): Uint8Array => new TextEncoder().encode(value);
const HOUR = 3_600_000;

describe.skipIf(binary === undefined)('kept processed messages on a real nats-server', () => {
  let server: NatsTestServer;
  let connection: NatsConnection;
  let manager: JetStreamManager;
  const opened: Messaging[] = [];

  async function open(overrides: TestMessagingOverrides = {}): Promise<Messaging> {
    const messaging = await connectMessaging(testMessagingSettings(server.url, overrides));
    opened.push(messaging);
    return messaging;
  }
  const kept = async (workflow: string) => (await manager.streams.info(keptStreamName(workflow))).state;

  beforeAll(async () => {
    server = await startNatsServer({ binary: binary! });
    connection = await connect({ servers: server.url });
    manager = await connection.jetstreamManager();
  });
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((messaging) => messaging.close()));
  });
  afterAll(async () => {
    await connection?.close();
    await server?.close();
  });

  it('keeps what was acknowledged (not what was terminated), the work queue as before, and replays it into the source again, not kept twice', async () => {
    const messaging = await open({ stream: { keepProcessedMs: HOUR } });
    await messaging.ensureWorkflowStream('keeping', ['in']);
    for (let index = 0; index < 4; index++)
      await messaging.publish('keeping', 'in', text(`body ${index}`), { messageId: `k-${index}`, headers: { 'x-n': `${index}` } });
    const consumer = await messaging.consume('keeping', 'in');
    const next = reader(consumer);
    (await next()).ack();
    await (await next()).ackConfirmed();
    (await next()).term('failed');
    await (await next()).ackConfirmed();
    await expect.poll(async () => (await kept('keeping')).messages).toBe(3);
    // the workflow's stream is still a work queue: nothing acknowledged or terminated stays in it
    expect(await messaging.pendingByWorkflow()).toEqual(new Map([['keeping', 0]]));

    expect(await messaging.replay('keeping', { sinceMs: 60_000 })).toEqual({ replayed: 3, firstSequence: 1, lastSequence: 3, skipped: 0, duplicates: 0 });
    const replayed = [];
    for (let index = 0; index < 3; index++) {
      const delivery = await next();
      replayed.push({
        id: delivery.messageId,
        body: new TextDecoder().decode(delivery.payload),
        n: delivery.headers['x-n'],
        from: delivery.headers[REPLAYED_FROM_HEADER],
      });
      await delivery.ackConfirmed();
    }
    expect(replayed).toEqual([
      { id: 'k-0:replay:1', body: 'body 0', n: '0', from: '1' },
      { id: 'k-1:replay:2', body: 'body 1', n: '1', from: '2' },
      { id: 'k-3:replay:3', body: 'body 3', n: '3', from: '3' },
    ]);
    // a message processed after the replays is kept as the fourth: the replays, acknowledged before it, were not kept again
    await messaging.publish('keeping', 'in', text('body 4'), { messageId: 'k-4' });
    await (await next()).ackConfirmed();
    await expect.poll(async () => (await kept('keeping')).messages).toBe(4);

    // the same replay again within the duplicate window stores nothing twice; the new kept message goes
    expect(await messaging.replay('keeping', { fromSequence: 1 })).toEqual({ replayed: 1, firstSequence: 1, lastSequence: 4, skipped: 0, duplicates: 3 });
    expect((await next()).messageId).toBe('k-4:replay:4');
    await consumer.stop();
  });

  it('refuses, sending nothing, a replay where nothing is kept, past the retention or the last kept, and skips a source the workflow no longer has', async () => {
    const none = await open();
    await none.ensureWorkflowStream('plain', ['in']);
    await expect(none.replay('plain', { sinceMs: 1000 })).rejects.toThrow(
      new NothingKeptError('plain', 'loom.messaging.stream.keepProcessedMs is 0 (set it, in ms, to keep processed messages for a replay)'),
    );
    const keeping = await open({ stream: { keepProcessedMs: HOUR } });
    // made while nothing was kept, and not started since: no kept stream
    await expect(keeping.replay('plain', { sinceMs: 1000 })).rejects.toBeInstanceOf(NothingKeptError);
    await expect(keeping.replay('plain', { sinceMs: 2 * HOUR })).rejects.toThrow(
      /reaches past what is kept: processed messages are kept 3600000 ms \(loom.messaging.stream.keepProcessedMs\)/,
    );

    await keeping.ensureWorkflowStream('moving', ['a', 'gone']);
    for (const source of ['a', 'a', 'a', 'gone']) await keeping.publish('moving', source, text(source));
    for (const source of ['a', 'gone']) {
      const consumer = await keeping.consume('moving', source);
      const next = reader(consumer);
      for (let index = 0; index < (source === 'a' ? 3 : 1); index++) await (await next()).ackConfirmed();
      await consumer.stop();
    }
    await expect.poll(async () => (await kept('moving')).messages).toBe(4);
    await expect(keeping.replay('moving', { fromSequence: 5 })).rejects.toThrow(
      new ReplayOutOfRangeError('moving', 'kept sequence 5 is past the last kept (4)'),
    );
    await manager.streams.purge(keptStreamName('moving'), { seq: 2 });
    await expect(keeping.replay('moving', { fromSequence: 1 })).rejects.toThrow(
      /kept sequence 1 is no longer kept: the oldest kept is 2; nothing was replayed$/,
    );
    expect((await manager.streams.info('LOOM_moving')).state.last_seq).toBe(4);

    // a new version without source `gone`: its kept message has nowhere to go
    await keeping.ensureWorkflowStream('moving', ['a']);
    expect(await keeping.replay('moving', { fromSequence: 2 })).toEqual({ replayed: 2, firstSequence: 2, lastSequence: 3, skipped: 1, duplicates: 0 });
  });
});
