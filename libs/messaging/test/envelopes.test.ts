import { natsServerBinary, type NatsTestServer, startNatsServer } from '@loom/testing';
import { connect, headers as natsHeaders, type NatsConnection } from 'nats';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connectMessaging, type Delivery, type Messaging, type PublishResult, sourceConsumerName, sourceSubject, streamName } from '../src/index.js';
import { ENVELOPE_HEADER } from '../src/envelope.js';
import { deliveryReader, testMessagingSettings } from '../src/testing.js';

const binary = natsServerBinary('message batch envelopes');
const text = (value: string): Uint8Array => new TextEncoder().encode(value);
const read = (delivery: Delivery): string => new TextDecoder().decode(delivery.payload);

/**
 * Issue 51, Must 2: the messages published to a source in one turn are stored as one JetStream message (a batch
 * envelope), handed out one by one and acknowledged to JetStream once all are settled; duplicates are still refused by
 * id, whether the same batch is retried or its ids come again in another one.
 */
describe.skipIf(binary === undefined)('batch envelopes on a real nats-server', () => {
  let server: NatsTestServer;
  let plain: NatsConnection;
  const opened: Messaging[] = [];

  async function open(): Promise<Messaging> {
    const messaging = await connectMessaging(testMessagingSettings(server.url, { consumer: { ackWaitMs: 30_000 } }));
    opened.push(messaging);
    return messaging;
  }

  /** Publishes each id in one turn (as a PublishMessages call does) and answers JetStream's answers in order. */
  function publishTurn(messaging: Messaging, workflow: string, ids: readonly string[]): Promise<PublishResult[]> {
    return Promise.all(ids.map((id) => messaging.publish(workflow, 'in', text(`body ${id}`), { messageId: id, headers: { 'x-id': id } })));
  }

  /** JetStream messages in the workflow's stream and deliveries of its inlet not yet acknowledged. */
  async function state(workflow: string): Promise<{ stored: number; unacknowledged: number }> {
    const manager = await plain.jetstreamManager();
    const stream = await manager.streams.info(streamName(workflow));
    const consumer = await manager.consumers.info(streamName(workflow), sourceConsumerName('in'));
    return { stored: stream.state.messages, unacknowledged: consumer.num_ack_pending };
  }

  beforeAll(async () => {
    server = await startNatsServer();
    plain = await connect({ servers: server.url });
  });
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((messaging) => messaging.close()));
  });
  afterAll(async () => {
    await plain?.close();
    await server?.close();
  });

  it('stores a turn’s publishes as one JetStream message and acknowledges it once every message in it is settled', async () => {
    const messaging = await open();
    await messaging.ensureWorkflowStream('batched', ['in']);
    const ids = ['a1', 'a2', 'a3', 'a2'];
    const results = await publishTurn(messaging, 'batched', ids);
    expect(results.map((result) => result.duplicate)).toEqual([false, false, false, true]);
    expect(new Set(results.map((result) => result.sequence))).toEqual(new Set([1]));
    expect(await state('batched')).toEqual({ stored: 1, unacknowledged: 0 });

    const next = deliveryReader(await messaging.consume('batched', 'in'));
    const deliveries = [await next(), await next(), await next()];
    expect(deliveries.map((delivery) => [delivery.messageId, read(delivery), delivery.headers['x-id'], delivery.sequence])).toEqual([
      ['a1', 'body a1', 'a1', 1],
      ['a2', 'body a2', 'a2', 1],
      ['a3', 'body a3', 'a3', 1],
    ]);
    deliveries[0]!.ack();
    deliveries[2]!.term('failed for good');
    expect(await state('batched')).toEqual({ stored: 1, unacknowledged: 1 });
    await deliveries[1]!.ackConfirmed();
    await expect.poll(() => state('batched')).toEqual({ stored: 0, unacknowledged: 0 });
  });

  it('refuses an id again in another batch, on this connection and as a batch retried whole after a restart', async () => {
    const first = await open();
    await first.ensureWorkflowStream('overlap', ['in']);
    expect((await publishTurn(first, 'overlap', ['b1', 'b2', 'b3'])).map((result) => result.duplicate)).toEqual([false, false, false]);
    // a retry grouped otherwise: the ids this executor stored are answered duplicate, the new one stored
    expect((await publishTurn(first, 'overlap', ['b2', 'b3', 'b4'])).map((result) => result.duplicate)).toEqual([true, true, false]);
    expect(await first.publish('overlap', 'in', text('again'), { messageId: 'b1' })).toEqual({ sequence: 1, duplicate: true });

    // another executor (or this one restarted) knows none of them: the same batch again is JetStream's duplicate
    const second = await open();
    expect((await publishTurn(second, 'overlap', ['b1', 'b2', 'b3'])).map((result) => result.duplicate)).toEqual([true, true, true]);
    // a third executor, knowing none of them, stores a batch that overlaps; the consumer that took b3 before lets it in once
    const third = await open();
    expect((await publishTurn(third, 'overlap', ['b3', 'b5'])).map((result) => result.duplicate)).toEqual([false, false]);
    expect((await state('overlap')).stored).toBe(3);

    const next = deliveryReader(await first.consume('overlap', 'in'));
    const taken: string[] = [];
    for (let index = 0; index < 5; index++) {
      const delivery = await next();
      taken.push(delivery.messageId!);
      delivery.ack();
    }
    expect(taken).toEqual(['b1', 'b2', 'b3', 'b4', 'b5']);
    // the second copy of b3 was acknowledged without being handed out: nothing is left
    await expect.poll(() => state('overlap')).toEqual({ stored: 0, unacknowledged: 0 });
  });

  it('delivers a batch handed back whole again, its messages with their ids, and drains single messages stored before envelopes', async () => {
    const messaging = await open();
    await messaging.ensureWorkflowStream('mixed', ['in']);
    // a message as loom stored them before envelopes (and still stores a batch of one)
    const js = plain.jetstream();
    const old = natsHeaders();
    old.set('x-id', 'old');
    await js.publish(sourceSubject('mixed', 'in'), text('body old'), { msgID: 'old', headers: old });
    await publishTurn(messaging, 'mixed', ['c1', 'c2']);
    expect((await state('mixed')).stored).toBe(2);

    const consumer = await messaging.consume('mixed', 'in');
    const next = deliveryReader(consumer);
    const oldOne = await next();
    expect([oldOne.messageId, read(oldOne), oldOne.headers['x-id']]).toEqual(['old', 'body old', 'old']);
    oldOne.ack();
    const [c1, c2] = [await next(), await next()];
    c1.ack();
    // the run ended before c2 was finished: the envelope comes again whole, and c2 alone enters again (c1 was finished
    // here; an executor that did not finish it, one restarted after a crash, takes both: at least once)
    c2.nak();
    const again = await next();
    expect([again.messageId, again.deliveryCount]).toEqual(['c2', 2]);
    again.ack();
    await expect.poll(() => state('mixed')).toEqual({ stored: 0, unacknowledged: 0 });
  });

  it('hands an envelope of a newer version back instead of terminating it: a newer executor reads it', async () => {
    const messaging = await open();
    await messaging.ensureWorkflowStream('newer', ['in']);
    const newer = natsHeaders();
    newer.set(ENVELOPE_HEADER, '2');
    await plain.jetstream().publish(sourceSubject('newer', 'in'), text('a format to come'), { msgID: 'v2', headers: newer });
    await messaging.publish('newer', 'in', text('body after'), { messageId: 'after' });
    const next = deliveryReader(await messaging.consume('newer', 'in'));
    const after = await next();
    expect(after.messageId).toBe('after');
    await after.ackConfirmed();
    // the version 2 envelope is still stored, waiting to be delivered again
    expect((await state('newer')).stored).toBe(1);
  });

  it('splits a turn larger than the server takes in one message into envelopes in order', async () => {
    const messaging = await open();
    await messaging.ensureWorkflowStream('large', ['in']);
    const big = 'x'.repeat(400 * 1024);
    const ids = ['d1', 'd2', 'd3'];
    const results = await Promise.all(ids.map((id) => messaging.publish('large', 'in', text(`${id} ${big}`), { messageId: id })));
    // NATS takes 1 MiB a message: d1 and d2 in one envelope, d3 on its own
    expect(results.map((result) => result.sequence)).toEqual([1, 1, 2]);
    const manager = await plain.jetstreamManager();
    const stored = await manager.streams.getMessage(streamName('large'), { seq: 1 });
    expect(stored.header.get(ENVELOPE_HEADER)).toBe('1');
    const next = deliveryReader(await messaging.consume('large', 'in'));
    const taken = [await next(), await next(), await next()];
    expect(taken.map((delivery) => read(delivery).slice(0, 2))).toEqual(ids);
  });
});
