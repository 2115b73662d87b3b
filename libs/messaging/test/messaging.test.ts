import { deliveryReader as reader, testMessagingSettings, type TestMessagingOverrides } from '../src/testing.js';
import { propagation, ROOT_CONTEXT, trace, TraceFlags } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { natsServerBinary, startNatsServer, type NatsTestServer } from '@loom/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  connectMessaging,
  type Delivery,
  type Messaging,
  type MessagingMetrics,
  MessagingClosedError,
  type MessagingSettings,
  StreamFullError,
  StreamNotFoundError,
} from '../src/index.js';

const binary = natsServerBinary('messaging');
const text = (value: string): Uint8Array => new TextEncoder().encode(value);
const read = (delivery: Delivery): string => new TextDecoder().decode(delivery.payload);

/** Settings for the test server: small limits, the rest as loom's defaults. */
const settingsFor = (server: NatsTestServer, overrides: TestMessagingOverrides = {}): MessagingSettings => testMessagingSettings(server.url, overrides);

/** Counts of the metrics hooks, by workflow. */
function countingMetrics() {
  const counts = { stored: 0, redelivered: 0, terminated: 0 };
  const metrics: MessagingMetrics = {
    stored: (_workflow, count) => (counts.stored += count),
    redelivered: () => (counts.redelivered += 1),
    terminated: () => (counts.terminated += 1),
  };
  return { counts, metrics };
}

describe.skipIf(binary === undefined)('messaging on a real nats-server', () => {
  let server: NatsTestServer;
  const opened: Messaging[] = [];

  async function open(overrides: Parameters<typeof settingsFor>[1] = {}, metrics?: MessagingMetrics): Promise<Messaging> {
    const messaging = await connectMessaging(settingsFor(server, overrides), metrics === undefined ? {} : { metrics });
    opened.push(messaging);
    return messaging;
  }

  beforeAll(async () => {
    server = await startNatsServer();
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  });
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((messaging) => messaging.close()));
  });
  afterAll(async () => {
    propagation.disable();
    await server?.close();
  });

  it('stores what is published and delivers it in order, with its id and headers, once acknowledged gone', async () => {
    const { counts, metrics } = countingMetrics();
    const messaging = await open({}, metrics);
    await messaging.ensureWorkflowStream('Article pipeline', ['web in', 'files']);
    await messaging.ensureWorkflowStream('Article pipeline', ['web in', 'files']);
    const results = [];
    for (const [index, body] of ['one', 'two', 'three'].entries()) {
      results.push(await messaging.publish('Article pipeline', 'web in', text(body), { messageId: `m-${index}`, headers: { 'loom-source': 'test' } }));
    }
    expect(results).toEqual([
      { sequence: 1, duplicate: false },
      { sequence: 2, duplicate: false },
      { sequence: 3, duplicate: false },
    ]);
    expect(counts.stored).toBe(3);
    const consumer = await messaging.consume('Article pipeline', 'web in');
    const next = reader(consumer);
    const received = [];
    for (let index = 0; index < 3; index++) {
      const delivery = await next();
      received.push({ body: read(delivery), id: delivery.messageId, count: delivery.deliveryCount, source: delivery.headers['loom-source'] });
      await delivery.ackConfirmed();
    }
    expect(received).toEqual([
      { body: 'one', id: 'm-0', count: 1, source: 'test' },
      { body: 'two', id: 'm-1', count: 1, source: 'test' },
      { body: 'three', id: 'm-2', count: 1, source: 'test' },
    ]);
    expect(await messaging.pendingByWorkflow()).toEqual(new Map([['Article pipeline', 0]]));
    await Promise.all([consumer.stop(), consumer.stop()]);
    expect(consumer.state).toBe('stopped');
  });

  it('makes sure of a stream again and again, from several connections at once, taking new sources and settings', async () => {
    const first = await open();
    const second = await open({ consumer: { ackWaitMs: 200 }, stream: { maxMessages: 100 } });
    await Promise.all([first.ensureWorkflowStream('shared', ['a']), second.ensureWorkflowStream('shared', ['a'])]);
    await expect(first.publish('shared', 'b', text('x'))).rejects.toBeInstanceOf(StreamNotFoundError);
    // a new version of the workflow with another source, and a shorter ack wait: the stream and consumer are updated
    await second.ensureWorkflowStream('shared', ['a', 'b']);
    await expect(first.publish('shared', 'b', text('x'), { messageId: 'b-1' })).resolves.toMatchObject({ duplicate: false });
    const next = reader(await second.consume('shared', 'b'));
    expect((await next()).deliveryCount).toBe(1);
    expect(await next()).toMatchObject({ messageId: 'b-1', deliveryCount: 2 });
  });

  it('stores a publish retried with the same id once, and answers the retry duplicate', async () => {
    const { counts, metrics } = countingMetrics();
    const messaging = await open({}, metrics);
    await messaging.ensureWorkflowStream('dedup', ['in']);
    const first = await messaging.publish('dedup', 'in', text('payload'), { messageId: 'retry-1' });
    const retry = await messaging.publish('dedup', 'in', text('payload'), { messageId: 'retry-1' });
    expect(retry).toEqual({ sequence: first.sequence, duplicate: true });
    expect(counts.stored).toBe(1);
    expect(await messaging.pendingByWorkflow()).toEqual(new Map([['dedup', 1]]));
  });

  it('delivers again a message not acknowledged within the ack wait, counted as redelivered', async () => {
    const { counts, metrics } = countingMetrics();
    const messaging = await open({ consumer: { ackWaitMs: 200 } }, metrics);
    await messaging.ensureWorkflowStream('redelivery', ['in']);
    await messaging.publish('redelivery', 'in', text('forgotten'), { messageId: 'f-1' });
    const next = reader(await messaging.consume('redelivery', 'in'));
    const first = await next();
    expect(first.deliveryCount).toBe(1);
    // not settled: the ack wait runs out and the same message comes again
    const second = await next();
    expect({ id: second.messageId, sequence: second.sequence, count: second.deliveryCount }).toEqual({ id: 'f-1', sequence: first.sequence, count: 2 });
    expect(counts.redelivered).toBe(1);
    await second.ackConfirmed();
  });

  it('gives back at stop the messages it fetched and had not handed out, so the next consumer gets them without an ack wait', async () => {
    // an ack wait far longer than the test may take: only a message given back can come again in time
    const messaging = await open({ consumer: { ackWaitMs: 600_000 } });
    await messaging.ensureWorkflowStream('handover', ['in']);
    for (let index = 0; index < 20; index++) await messaging.publish('handover', 'in', text(`m${index}`), { messageId: `h-${index}` });
    const first = await messaging.consume('handover', 'in', { batch: 16 });
    const iterator = first[Symbol.asyncIterator]();
    const taken = await iterator.next();
    if (taken.done === true) throw new Error('the consumer ended');
    await taken.value.ackConfirmed();
    await first.stop();
    // the reader goes on to the end: nothing more is handed out, and the fetched messages are given back on the way
    expect((await iterator.next()).done).toBe(true);
    const next = reader(await messaging.consume('handover', 'in'));
    const received = new Set<string>();
    while (received.size < 19) {
      const delivery = await next();
      received.add(delivery.messageId!);
      delivery.ack();
    }
    expect([...received].sort()).toEqual(Array.from({ length: 19 }, (_, index) => `h-${index + 1}`).sort());
  }, 20_000);

  it('never delivers a terminated message again, and counts it', async () => {
    const { counts, metrics } = countingMetrics();
    // an ack wait longer than the test: a stall before term() must not bring the message back by itself
    const messaging = await open({ consumer: { ackWaitMs: 600_000 } }, metrics);
    await messaging.ensureWorkflowStream('poison', ['in']);
    await messaging.publish('poison', 'in', text('bad'), { messageId: 'bad' });
    const next = reader(await messaging.consume('poison', 'in'));
    (await next()).term('failed past max_retry');
    expect(counts.terminated).toBe(1);
    // JetStream removed it from the stream, so nothing is left to deliver again: the next delivery is a new message
    await expect.poll(() => messaging.pendingByWorkflow()).toEqual(new Map([['poison', 0]]));
    await messaging.publish('poison', 'in', text('good'), { messageId: 'good' });
    const after = await next();
    expect({ id: after.messageId, count: after.deliveryCount }).toEqual({ id: 'good', count: 1 });
    after.ack();
  });

  it('loses nothing acknowledged when the server is killed and restarted mid-stream', async () => {
    const total = 300;
    const messaging = await open({ consumer: { ackWaitMs: 2000 } });
    await messaging.ensureWorkflowStream('restart', ['in']);
    const consumer = await messaging.consume('restart', 'in', { batch: 16 });
    const received = new Set<string>();
    const consuming = (async () => {
      for await (const delivery of consumer) {
        received.add(delivery.messageId!);
        delivery.ack();
        if (received.size === total) break;
      }
    })();
    const acknowledged = new Set<string>();
    for (let index = 0; index < total; index++) {
      if (index === total / 2) await server.restart({ kill: true });
      // a publish that got no answer is retried with the same id: stored once whatever happened to the first
      for (;;) {
        const outcome = await messaging.publish('restart', 'in', text(`message ${index}`), { messageId: `r-${index}` }).catch((error: unknown) => error);
        if (!(outcome instanceof Error)) break;
        expect(outcome).toMatchObject({ retryable: true });
      }
      acknowledged.add(`r-${index}`);
    }
    await consuming;
    expect([...acknowledged].filter((id) => !received.has(id))).toEqual([]);
    await consumer.stop();
  }, 120_000);

  it('refuses a publish to a full stream with a typed, retryable resource-exhausted error, and takes it once there is room', async () => {
    const messaging = await open({ stream: { maxMessages: 2 } });
    await messaging.ensureWorkflowStream('tiny', ['in']);
    await messaging.publish('tiny', 'in', text('1'));
    await messaging.publish('tiny', 'in', text('2'));
    const error = await messaging.publish('tiny', 'in', text('3')).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(StreamFullError);
    expect(error).toMatchObject({ kind: 'resource-exhausted', retryable: true, workflow: 'tiny' });
    const next = reader(await messaging.consume('tiny', 'in'));
    await (await next()).ackConfirmed();
    await expect(messaging.publish('tiny', 'in', text('3'))).resolves.toMatchObject({ duplicate: false });
  });

  it('carries the trace context from the publisher to the delivery (W3C traceparent)', async () => {
    const messaging = await open();
    await messaging.ensureWorkflowStream('traced', ['in']);
    const spanContext = { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: TraceFlags.SAMPLED };
    await messaging.publish('traced', 'in', text('x'), { context: trace.setSpanContext(ROOT_CONTEXT, spanContext) });
    const delivery = await reader(await messaging.consume('traced', 'in'))();
    expect(delivery.headers['traceparent']).toBe('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01');
    expect(trace.getSpanContext(delivery.traceContext(ROOT_CONTEXT))).toMatchObject({ traceId: spanContext.traceId, spanId: spanContext.spanId });
    delivery.ack();
  });

  it('stores a publish answered "no responders" once the stream is there (a server getting its streams back after a restart)', async () => {
    const messaging = await open();
    // the publish goes out first on the connection, so the server answers it before it makes the stream
    const published = messaging.publish('arriving', 'in', text('x'), { messageId: 'arriving-1' });
    await messaging.ensureWorkflowStream('arriving', ['in']);
    await expect(published).resolves.toMatchObject({ sequence: 1, duplicate: false });
    const delivery = await reader(await messaging.consume('arriving', 'in'))();
    expect(delivery.deliveryCount).toBe(1);
    delivery.ack();
  });

  it('answers core requests (reply), and a request nobody answers, or whose answer throws, is unavailable', async () => {
    const [answering, asking] = [await open(), await open()];
    const stop = await answering.reply('loom.test.echo', (data) => Promise.resolve(text(`echo ${new TextDecoder().decode(data)}`)));
    await answering.reply('loom.test.broken', () => {
      throw new Error('cannot answer');
    });
    expect(new TextDecoder().decode(await asking.request('loom.test.echo', text('hi')))).toBe('echo hi');
    await expect(asking.request('loom.test.broken', text('hi'), 200)).rejects.toMatchObject({ name: 'MessagingUnavailableError', kind: 'unavailable' });
    stop();
    await expect(asking.request('loom.test.nobody', text('hi'))).rejects.toThrow("request on 'loom.test.nobody': NATS is unavailable (nobody answers on it)");
  });

  it('refuses a publish to a source without a stream, and any call once closed', async () => {
    const messaging = await open();
    await messaging.ensureWorkflowStream('known', ['in']);
    await expect(messaging.publish('known', 'other', text('x'))).rejects.toBeInstanceOf(StreamNotFoundError);
    await expect(messaging.publish('unknown', 'in', text('x'))).rejects.toMatchObject({ kind: 'failed-precondition', source: 'in' });
    expect(await messaging.deleteWorkflowStream('known')).toBe(true);
    expect(await messaging.deleteWorkflowStream('known')).toBe(false);
    await Promise.all([messaging.close(), messaging.close()]);
    expect(messaging.state).toBe('closed');
    await expect(messaging.publish('known', 'in', text('x'))).rejects.toBeInstanceOf(MessagingClosedError);
  });
});

describe.skipIf(binary === undefined)('connecting', () => {
  it('a refused token is a typed error that does not repeat it', async () => {
    const guarded = await startNatsServer({ token: 'the-right-token-0123456789' });
    try {
      const settings = { ...settingsFor(guarded), token: 'a-wrong-token-9876543210' };
      const error = await connectMessaging(settings).catch((caught: unknown) => caught);
      expect(error).toMatchObject({ name: 'MessagingAuthenticationError', kind: 'failed-precondition', retryable: false });
      expect((error as Error).message).not.toMatch(/token-0123|token-9876/);
      const messaging = await connectMessaging({ ...settingsFor(guarded), token: 'the-right-token-0123456789' });
      await messaging.close();
    } finally {
      await guarded.close();
    }
  });

  it('no server listening is unavailable, retryable', async () => {
    const stopped = await startNatsServer();
    const settings = settingsFor(stopped);
    await stopped.close();
    await expect(connectMessaging(settings)).rejects.toMatchObject({ name: 'MessagingUnavailableError', kind: 'unavailable', retryable: true });
  });
});
