import { COMPONENT_KINDS, type WorkflowConfiguration } from '@loom/domain';
import { connectMessaging, type Messaging, type MessagingMetrics, StreamFullError } from '@loom/messaging';
import { capturedLogger } from '@loom/service-kit/testing';
import { natsServerBinary, type NatsTestServer, startNatsServer } from '@loom/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { inletFactory } from '../src/components/inlet.js';
import { publishBatch } from '../src/publishing.js';
import { type ComponentFactory, type LoomMessage, outcome } from '../src/runtime/component.js';
import { JetStreamIntake, jetStreamIntake } from '../src/runtime/jetstream-intake.js';
import { MessageTrail } from '../src/runtime/message-trail.js';
import { WorkflowRun } from '../src/runtime/workflow-run.js';
import { durableSettings, durableState, processorOf, recordingSinks } from './durable.js';
import { captureSink, instance, workflowOf } from './workflows.js';

const binary = natsServerBinary('executor durable messages');

/** Counts of the messaging metrics hooks. */
function countingMetrics(): { counts: { stored: number; redelivered: number; terminated: number }; metrics: MessagingMetrics } {
  const counts = { stored: 0, redelivered: 0, terminated: 0 };
  return {
    counts,
    metrics: {
      stored: (_workflow, count) => (counts.stored += count),
      redelivered: () => (counts.redelivered += 1),
      terminated: () => (counts.terminated += 1),
    },
  };
}

/** A JetStream intake that counts the progress reports it sends JetStream (one per unfinished delivery each time). */
class ProgressCounting extends JetStreamIntake {
  reports = 0;

  protected override touchUnfinished(): number {
    const touched = super.touchUnfinished();
    this.reports += touched;
    return touched;
  }
}

const message = (n: number): LoomMessage => ({ id: `m${n}`, body: { n }, headers: {} });
const withdrawal = { signal: new AbortController().signal };

/**
 * in → split (two outputs per message) → keep (drops odd n) → written;
 * in → work (refuses n % 5 = 0; failure handler `errors`) → archive.
 */
function pipeline(name: string): WorkflowConfiguration {
  return workflowOf(
    name,
    [
      instance(COMPONENT_KINDS.INLET, 'in'),
      instance(COMPONENT_KINDS.MESSAGE_TRANSFORMER, 'split', { script: 'unused', language: 'javascript' }),
      instance(COMPONENT_KINDS.MESSAGE_FILTER, 'keep', { script: 'unused', language: 'javascript' }),
      instance(COMPONENT_KINDS.LOGGER, 'written'),
      instance(COMPONENT_KINDS.HTTP_ENRICHER, 'work', { url: 'http://unused', failure_handler: 'errors' }),
      instance(COMPONENT_KINDS.LOGGER, 'errors'),
      instance(COMPONENT_KINDS.LOGGER, 'archive'),
    ],
    [
      ['in', 'split'],
      ['split', 'keep'],
      ['keep', 'written'],
      ['in', 'work'],
      ['work', 'archive'],
    ],
  );
}

const numberOf = (item: LoomMessage): number => Number(item.body['n']);

/** The pipeline's components: the sinks record what they write and can be held shut. */
function pipelineFactories(sinks: ComponentFactory): Map<string, ComponentFactory> {
  return new Map<string, ComponentFactory>([
    [COMPONENT_KINDS.INLET, inletFactory],
    [COMPONENT_KINDS.MESSAGE_TRANSFORMER, processorOf((item) => outcome.emit({ ...item, id: `${item.id}/1` }, { ...item, id: `${item.id}/2` }))],
    [COMPONENT_KINDS.MESSAGE_FILTER, processorOf((item) => (numberOf(item) % 2 === 0 ? outcome.emit(item) : outcome.none()))],
    [COMPONENT_KINDS.HTTP_ENRICHER, processorOf((item) => (numberOf(item) % 5 === 0 ? outcome.fail('refused: a multiple of 5') : outcome.emit(item)))],
    [COMPONENT_KINDS.LOGGER, sinks],
  ]);
}

describe.skipIf(binary === undefined)('a workflow run in durable mode, on a real nats-server', () => {
  let server: NatsTestServer;
  const opened: Messaging[] = [];
  const runs: WorkflowRun[] = [];
  const { logger, lines } = capturedLogger();

  async function open(overrides: Parameters<typeof durableSettings>[1] = {}, metrics?: MessagingMetrics): Promise<Messaging> {
    const messaging = await connectMessaging(durableSettings(server, overrides), metrics === undefined ? {} : { metrics });
    opened.push(messaging);
    return messaging;
  }

  async function start(
    workflow: WorkflowConfiguration,
    factories: Map<string, ComponentFactory>,
    messaging: Messaging,
    trail?: MessageTrail,
  ): Promise<WorkflowRun> {
    const run = await WorkflowRun.start(workflow, { factories, logger, intake: jetStreamIntake(messaging), ...(trail === undefined ? {} : { trail }) });
    runs.push(run);
    return run;
  }

  beforeAll(async () => {
    server = await startNatsServer();
  });
  afterEach(async () => {
    await Promise.all(runs.splice(0).map((run) => run.stop(0)));
    await Promise.all(opened.splice(0).map((messaging) => messaging.close()));
  });
  afterAll(async () => {
    await server?.close();
  });

  it('answers a publish once stored, and acknowledges each delivery only when all it led to is finished', async () => {
    const sinks = recordingSinks();
    sinks.closeGate();
    const trail = new MessageTrail({ maxMessages: 100, retentionMs: 60_000 });
    const run = await start(pipeline('fan-out'), pipelineFactories(sinks.factory), await open(), trail);
    for (let n = 1; n <= 20; n++) expect(await run.publish('in', message(n), withdrawal, true)).toBe('accepted');
    // every publish answered: all 20 are in the stream; the sinks are held, so none is acknowledged yet
    expect(await durableState(server, 'fan-out', 'in')).toMatchObject({ stored: 20 });
    await expect.poll(() => durableState(server, 'fan-out', 'in').then((state) => state.ackPending)).toBeGreaterThan(0);
    expect((await durableState(server, 'fan-out', 'in')).stored).toBe(20);
    sinks.open();
    await expect.poll(() => durableState(server, 'fan-out', 'in')).toEqual({ stored: 0, ackPending: 0, undelivered: 0, redelivered: 0, delivered: 20 });
    const evens = [2, 4, 6, 8, 10, 12, 14, 16, 18, 20];
    expect(sinks.written.filter((line) => line.startsWith('written ')).sort()).toEqual(evens.flatMap((n) => [`written m${n}/1`, `written m${n}/2`]).sort());
    expect(sinks.written.filter((line) => line.startsWith('archive ')).length).toBe(16);
    expect(sinks.written.filter((line) => line.startsWith('errors ')).length).toBe(4);
    // lineage (issue 50): m2's trace, delivered from the stream, follows its outputs m2/1 and m2/2 by the id it entered with
    const traced = trail.find('m2', 'fan-out')!.events.map((event) => `${event.kind} ${event.component} ${event.messageId}`);
    expect(traced.slice(0, 1)).toEqual(['ACCEPTED in m2']);
    expect(traced.slice(1).sort()).toEqual(
      [
        'PROCESSED split m2',
        'PROCESSED work m2',
        'PROCESSED archive m2',
        'PROCESSED keep m2/1',
        'PROCESSED keep m2/2',
        'PROCESSED written m2/1',
        'PROCESSED written m2/2',
      ].sort(),
    );
  });

  it('publishes a batch to JetStream all at once, stored and delivered in the batch’s order, a repeated id answered duplicate', async () => {
    const sinks = recordingSinks();
    const workflow = workflowOf('batch', [instance(COMPONENT_KINDS.INLET, 'in'), instance(COMPONENT_KINDS.LOGGER, 'written')], [['in', 'written']]);
    const run = await start(workflow, pipelineFactories(sinks.factory), await open());
    const ids = [...Array.from({ length: 50 }, (_, index) => `b${index}`), 'b7'];
    const messages = ids.map((messageId, index) => ({ messageId, body: { n: index }, headers: {} }));
    const results = await publishBatch(run, 'in', messages, new AbortController().signal, 'messages', logger);
    expect(results.map(({ accepted, duplicate }) => ({ accepted, duplicate }))).toEqual(ids.map((_, index) => ({ accepted: true, duplicate: index === 50 })));
    await expect.poll(() => sinks.written.length).toBe(50);
    expect(sinks.written).toEqual(ids.slice(0, 50).map((id) => `written ${id}`));
  });

  it('stores a publish retried with the same id once and answers it duplicate', async () => {
    const { counts, metrics } = countingMetrics();
    const sinks = recordingSinks();
    const run = await start(pipeline('duplicates'), pipelineFactories(sinks.factory), await open({}, metrics));
    expect(await run.publish('in', message(1), withdrawal, true)).toBe('accepted');
    expect(await run.publish('in', message(1), withdrawal, true)).toBe('duplicate');
    await expect.poll(() => durableState(server, 'duplicates', 'in')).toMatchObject({ stored: 0, ackPending: 0, delivered: 1 });
    expect(counts.stored).toBe(1);
    expect(sinks.written.filter((line) => line.startsWith('archive '))).toEqual(['archive m1']);
  });

  it('carries a message’s headers and trace context through the stream, and keeps JetStream’s own headers out of it', async () => {
    const sink = captureSink();
    const factories = pipelineFactories(sink.factory);
    const workflow = workflowOf('headers', [instance(COMPONENT_KINDS.INLET, 'in'), instance(COMPONENT_KINDS.LOGGER, 'written')], [['in', 'written']]);
    const run = await start(workflow, factories, await open());
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    await run.publish('in', { id: 'h1', body: { n: 1 }, headers: { traceparent, 'x-loom-source': 'test' } }, withdrawal, true);
    await expect.poll(() => sink.received.length).toBe(1);
    const [received] = sink.received;
    expect(received?.id).toBe('h1');
    expect(received?.headers['x-loom-source']).toBe('test');
    expect(received?.headers['traceparent']).toMatch(/^00-0af7651916cd43dd8448eb211c80319c-[0-9a-f]{16}-01$/);
    expect(Object.keys(received?.headers ?? {}).filter((name) => name.toLowerCase().startsWith('nats-'))).toEqual([]);
  });

  it('terminates a message that failed past max_retry with no failure handler: counted, logged, never delivered again', async () => {
    const { counts, metrics } = countingMetrics();
    const sinks = recordingSinks();
    const workflow = workflowOf(
      'poison',
      [
        instance(COMPONENT_KINDS.INLET, 'in'),
        instance(COMPONENT_KINDS.HTTP_ENRICHER, 'work', { url: 'http://unused', max_retry: 2 }),
        instance(COMPONENT_KINDS.LOGGER, 'archive'),
      ],
      [
        ['in', 'work'],
        ['work', 'archive'],
      ],
    );
    const factories = pipelineFactories(sinks.factory);
    let attempts = 0;
    factories.set(
      COMPONENT_KINDS.HTTP_ENRICHER,
      processorOf((item) => {
        if (numberOf(item) !== 5) return outcome.emit(item);
        attempts++;
        return outcome.fail('the endpoint is down', true);
      }),
    );
    const trail = new MessageTrail({ maxMessages: 100, retentionMs: 60_000 });
    const run = await start(workflow, factories, await open({}, metrics), trail);
    for (const n of [4, 5, 6]) await run.publish('in', message(n), withdrawal, true);
    await expect.poll(() => durableState(server, 'poison', 'in')).toEqual({ stored: 0, ackPending: 0, undelivered: 0, redelivered: 0, delivered: 3 });
    expect(counts).toMatchObject({ terminated: 1, redelivered: 0 });
    expect(attempts).toBe(3);
    expect(sinks.written.sort()).toEqual(['archive m4', 'archive m6']);
    expect(lines.filter((line) => line.includes('message terminated') && line.includes('"messageId":"m5"'))).toHaveLength(1);
    // lineage (issue 50): each failed attempt, then the failure, in order
    expect(trail.find('m5', 'poison')!.events.map((event) => [event.kind, event.component, event.attempt ?? 0, event.failure?.message ?? ''])).toEqual([
      ['ACCEPTED', 'in', 0, ''],
      ['ATTEMPT_FAILED', 'work', 1, 'the endpoint is down'],
      ['ATTEMPT_FAILED', 'work', 2, 'the endpoint is down'],
      ['FAILED', 'work', 3, 'the endpoint is down'],
    ]);
  });

  it('delivers again to the next run the messages a stopped run had not finished: nothing acknowledged is lost', async () => {
    const messaging = await open();
    const first = recordingSinks();
    first.closeGate();
    const workflow = workflowOf('restart', [instance(COMPONENT_KINDS.INLET, 'in'), instance(COMPONENT_KINDS.LOGGER, 'written')], [['in', 'written']]);
    const run = await start(workflow, pipelineFactories(first.factory), messaging);
    for (let n = 1; n <= 10; n++) await run.publish('in', message(n), withdrawal, true);
    await expect.poll(() => durableState(server, 'restart', 'in').then((state) => state.ackPending)).toBeGreaterThan(0);
    // the sink never finishes: the stop's drain runs out and the deliveries in flight are handed back
    expect(await run.stop(0)).toBe(false);
    expect(first.written).toEqual([]);
    const second = recordingSinks();
    await start(workflow, pipelineFactories(second.factory), messaging);
    await expect.poll(() => second.written.length).toBe(10);
    expect(second.written.sort()).toEqual(Array.from({ length: 10 }, (_, index) => `written m${index + 1}`).sort());
    await expect.poll(() => durableState(server, 'restart', 'in')).toMatchObject({ stored: 0, ackPending: 0, undelivered: 0 });
  });

  it('keeps a delivery held behind a slow component from being delivered again, telling JetStream it is still being worked on', async () => {
    const sinks = recordingSinks();
    sinks.closeGate();
    const messaging = await open({ consumer: { ackWaitMs: 200 } });
    const workflow = workflowOf('slow', [instance(COMPONENT_KINDS.INLET, 'in'), instance(COMPONENT_KINDS.LOGGER, 'written')], [['in', 'written']]);
    let counting: ProgressCounting | undefined;
    const run = await WorkflowRun.start(workflow, {
      factories: pipelineFactories(sinks.factory),
      logger,
      intake: (parts) => (counting = new ProgressCounting(messaging, parts, 40)),
    });
    runs.push(run);
    await run.publish('in', message(1), withdrawal, true);
    // held through many ack waits (each progress report restarts it): the one delivery stays the only one
    await expect.poll(() => counting?.reports ?? 0).toBeGreaterThanOrEqual(15);
    expect(await durableState(server, 'slow', 'in')).toMatchObject({ ackPending: 1, redelivered: 0, delivered: 1 });
    sinks.open();
    await expect.poll(() => durableState(server, 'slow', 'in')).toMatchObject({ stored: 0, ackPending: 0, redelivered: 0, delivered: 1 });
    expect(sinks.written).toEqual(['written m1']);
  });

  it('refuses a publish to a full stream with a typed resource-exhausted error naming the workflow, dropping nothing', async () => {
    const sinks = recordingSinks();
    sinks.closeGate();
    const workflow = workflowOf('tiny', [instance(COMPONENT_KINDS.INLET, 'in'), instance(COMPONENT_KINDS.LOGGER, 'written')], [['in', 'written']]);
    const run = await start(workflow, pipelineFactories(sinks.factory), await open({ stream: { maxMessages: 2 } }));
    await run.publish('in', message(1), withdrawal, true);
    await run.publish('in', message(2), withdrawal, true);
    const refused = await run.publish('in', message(3), withdrawal, true).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(StreamFullError);
    expect(refused).toMatchObject({ kind: 'resource-exhausted', retryable: true, workflow: 'tiny' });
    sinks.open();
    await expect.poll(() => sinks.written.length).toBe(2);
    await expect.poll(() => durableState(server, 'tiny', 'in').then((state) => state.stored)).toBe(0);
    expect(await run.publish('in', message(3), withdrawal, true)).toBe('accepted');
    await expect.poll(() => sinks.written.sort()).toEqual(['written m1', 'written m2', 'written m3']);
  });
});
