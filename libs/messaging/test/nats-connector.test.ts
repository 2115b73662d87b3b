import { natsServerBinary, startNatsServer, type NatsTestServer } from '@loom/testing';
import { connect, DiscardPolicy, type NatsConnection, StorageType } from 'nats';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connectNats, JetStreamRequestError, MessagingClosedError, type NatsConnector, SubjectStreamFullError } from '../src/index.js';

const binary = natsServerBinary('NATS connector');
const text = (value: string): Uint8Array => new TextEncoder().encode(value);
const read = (payload: Uint8Array): string => new TextDecoder().decode(payload);

/** The next item of an iterator; the test fails when it ended. */
async function nextOf<T>(iterator: AsyncIterator<T>): Promise<T> {
  const next = await iterator.next();
  if (next.done === true) throw new Error('the iteration ended');
  return next.value;
}

describe.skipIf(binary === undefined)('the NATS connector on a real nats-server', () => {
  let server: NatsTestServer;
  let admin: NatsConnection;
  const opened: NatsConnector[] = [];

  async function open(): Promise<NatsConnector> {
    const connector = await connectNats({ servers: [server.url], requestTimeoutMs: 2000 }, { name: 'connector-test' });
    opened.push(connector);
    return connector;
  }

  beforeAll(async () => {
    server = await startNatsServer();
    admin = await connect({ servers: server.url });
    const manager = await admin.jetstreamManager();
    await manager.streams.add({ name: 'ORDERS', subjects: ['orders.>'], storage: StorageType.File, max_msgs: 2, discard: DiscardPolicy.New });
  });
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((connector) => connector.close()));
  });
  afterAll(async () => {
    await admin?.close();
    await server?.close();
  });

  it('delivers a core message with its headers through a queue group', async () => {
    const connector = await open();
    const first = connector.subscribe('events.*', { queue: 'workers' });
    const second = connector.subscribe('events.*', { queue: 'workers' });
    await connector.flush();
    connector.publish('events.created', text('{"n":1}'), { headers: { 'x-source': 'test' } });
    await connector.flush();
    const received = await Promise.race([first, second].map((subscription) => nextOf(subscription[Symbol.asyncIterator]())));
    expect(received).toMatchObject({ subject: 'events.created', headers: { 'x-source': 'test' } });
    expect(read(received.payload)).toBe('{"n":1}');
  });

  it('keeps at most maxBuffered messages for a reader that falls behind, drops and counts the newer ones', async () => {
    const connector = await open();
    const subscription = connector.subscribe('burst', { maxBuffered: 2 });
    await connector.flush();
    for (const n of [1, 2, 3, 4, 5]) connector.publish('burst', text(String(n)));
    await connector.flush();
    await expect.poll(() => subscription.pending + subscription.dropped).toBe(5);
    const iterator = subscription[Symbol.asyncIterator]();
    expect([read((await nextOf(iterator)).payload), read((await nextOf(iterator)).payload)]).toEqual(['1', '2']);
    expect(subscription.dropped).toBe(3);
    connector.publish('burst', text('6'));
    expect(read((await nextOf(iterator)).payload)).toBe('6');
    await subscription.stop();
    expect(await iterator.next()).toEqual({ done: true, value: undefined });
  });

  it('finds the stream of a subject, stores into it, and refuses with a typed error when it is full', async () => {
    const connector = await open();
    expect(await connector.streamOfSubject('orders.new')).toBe('ORDERS');
    expect(await connector.streamOfSubject('events.created')).toBeUndefined();
    expect(await connector.publishToStream('orders.new', text('1'))).toEqual({ sequence: 1, duplicate: false });
    expect(await connector.publishToStream('orders.new', text('2'))).toEqual({ sequence: 2, duplicate: false });
    const full = await connector.publishToStream('orders.new', text('3')).catch((error: unknown) => error);
    expect(full).toBeInstanceOf(SubjectStreamFullError);
    expect(full).toMatchObject({ kind: 'resource-exhausted', retryable: true, subject: 'orders.new' });
    const nowhere = await connector.publishToStream('events.created', text('x')).catch((error: unknown) => error);
    expect(nowhere).toBeInstanceOf(JetStreamRequestError);
    expect((nowhere as Error).message).toContain("no JetStream stream takes subject 'events.created'");
  });

  it('consumes a stream through a durable consumer; what was not acknowledged comes again to the next consumer', async () => {
    const connector = await open();
    // a short ack wait: the nak'd message may come back to this consumer before it stops, unread, and then returns
    // only after its ack wait (seen in a fresh-clone run: 30 s, and a delivery count of 3)
    const options = { stream: 'ORDERS', durable: 'reader', deliverPolicy: 'all', ackWaitMs: 3_000, maxDeliver: 5, maxAckPending: 10, owner: 'test' } as const;
    const consumer = await connector.consumeStream(options);
    const iterator = consumer[Symbol.asyncIterator]();
    const first = await nextOf(iterator);
    await first.ackConfirmed();
    const second = await nextOf(iterator);
    second.nak();
    await consumer.stop();
    const again = await nextOf((await connector.consumeStream(options))[Symbol.asyncIterator]());
    expect([read(first.payload), read(second.payload), read(again.payload)]).toEqual(['1', '2', '2']);
    // delivered again: twice, or three times when the stopped consumer had taken it back once unread
    expect(again.deliveryCount).toBeGreaterThanOrEqual(2);
    expect(again.deliveryCount).toBeLessThanOrEqual(3);
    await connector.close();
    await connector.close();
    expect(() => connector.subscribe('events.*')).toThrow(MessagingClosedError);
  });
});
