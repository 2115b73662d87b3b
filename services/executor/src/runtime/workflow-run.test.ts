import { setTimeout as sleep } from 'node:timers/promises';
import { Writable } from 'node:stream';
import { COMPONENT_KINDS, type ComponentInstance, type WorkflowConfiguration } from '@loom/domain';
import { createLogger } from '@loom/telemetry';
import { describe, expect, it } from 'vitest';
import { createServer } from 'node:http';
import { type AddressInfo } from 'node:net';
import { enricherFactory } from '../components/enricher.js';
import { inletFactory } from '../components/inlet.js';
import { instance, workflowOf } from '../../test/workflows.js';
import { IllegalTransitionError, Lifecycle, withResolvers } from '@loom/foundation';
import { type ComponentFactory, ComponentFailedError, type LoomMessage, type Outcome, outcome } from './component.js';
import { type RunOptions } from './options.js';
import { RUN_TRANSITIONS, WorkflowRun } from './workflow-run.js';

const logLines: string[] = [];
const logger = createLogger({
  level: 'debug',
  destination: new Writable({
    write(chunk: Buffer, _encoding, callback) {
      logLines.push(chunk.toString());
      callback();
    },
  }),
});

const workflow = (components: ComponentInstance[], links: [string, string][]): WorkflowConfiguration => workflowOf('run test', components, links);

/** A processor kind whose behaviour the test gives, registered under the enricher's kind (it has the failure options). */
function processorKind(process: (batch: readonly LoomMessage[]) => Promise<readonly Outcome[]>): ComponentFactory {
  return { kind: 'processor', create: () => Promise.resolve({ process, close: () => Promise.resolve() }) };
}

/** Starts a run of an inlet `in` linked to one processor `name` (registered as a logger) with the given run options. */
function inletTo(name: string, processor: ComponentFactory, options: Pick<RunOptions, 'queueCapacity' | 'maxBatch'>): Promise<WorkflowRun> {
  return WorkflowRun.start(workflow([instance(COMPONENT_KINDS.INLET, 'in'), instance(COMPONENT_KINDS.LOGGER, name)], [['in', name]]), {
    factories: new Map([
      [COMPONENT_KINDS.INLET, inletFactory],
      [COMPONENT_KINDS.LOGGER, processor],
    ]),
    logger,
    ...options,
  });
}

function message(n: number, padding = ''): LoomMessage {
  return { id: `m${n}`, body: { n, padding }, headers: {} };
}

describe('workflow run', () => {
  it('keeps memory bounded with a slow sink while 100,000 messages are published: the queues fill and publishers wait', async () => {
    let received = 0;
    let deepest = 0;
    const sink = processorKind(async (batch) => {
      received += batch.length;
      await sleep(2);
      return batch.map(() => outcome.none());
    });
    const run = await inletTo('slow sink', sink, { queueCapacity: 1000, maxBatch: 100 });
    const padding = 'x'.repeat(2000);
    const retained = (): number => {
      (globalThis as { gc?: () => void }).gc?.();
      return process.memoryUsage().heapUsed;
    };
    const before = retained();
    let peak = before;
    const withdrawal = new AbortController();
    for (let n = 0; n < 100_000; n++) {
      // each message its own 2 kB string, so holding them would show
      await run.publish('in', message(n, `${n}${padding}`), withdrawal);
      if (n % 5000 === 0) {
        peak = Math.max(peak, retained());
        deepest = Math.max(deepest, run.counters()[1]?.queueDepth ?? 0);
      }
    }
    expect(await run.stop(30_000)).toBe(true);
    expect(received).toBe(100_000);
    expect(deepest).toBeLessThanOrEqual(1000);
    // 100,000 messages of 2 kB held at once would be 200 MB and more; bounded queues hold about 1,100 (~2–3 MB)
    expect(typeof (globalThis as { gc?: unknown }).gc).toBe('function');
    expect(peak - before).toBeLessThan(20 * 1024 * 1024);
    expect(run.counters()[1]).toMatchObject({ messagesIn: 100_000, messagesFailed: 0, queueDepth: 0 });
  });

  it("reads a publisher's signal only when its message must wait for room, and a waiting message is withdrawn by it", async () => {
    const { promise: gate, resolve: release } = withResolvers();
    let taken = 0;
    const held = processorKind(async (batch) => {
      taken += batch.length;
      await gate;
      return batch.map(() => outcome.none());
    });
    const run = await inletTo('held', held, { queueCapacity: 1, maxBatch: 1 });
    const reads: string[] = [];
    /** A withdrawal that records when its signal is read, as a gRPC call's context makes its AbortController then. */
    const watched = (name: string, controller: AbortController) => ({
      get signal() {
        reads.push(name);
        return controller.signal;
      },
    });
    // m0 is taken by the held processor, m1 fills the queue: both find room and their signals are never read
    await run.publish('in', message(0), watched('m0', new AbortController()));
    await expect.poll(() => taken).toBe(1);
    await run.publish('in', message(1), watched('m1', new AbortController()));
    expect(reads).toEqual([]);
    // m2 must wait: its signal is read, and aborting it withdraws m2 without queueing it
    const controller = new AbortController();
    const waiting = run.publish('in', message(2), watched('m2', controller));
    await expect.poll(() => reads).toEqual(['m2']);
    controller.abort(new Error('the caller went away'));
    await expect(waiting).rejects.toThrow('the caller went away');
    release();
    expect(await run.stop(5000)).toBe(true);
    expect(taken).toBe(2);
    expect(run.counters()[1]).toMatchObject({ messagesIn: 2 });
  });

  it("hands a batch's outputs to the next component as one batch, not the first alone and then the rest", async () => {
    const { promise: gate, resolve: release } = withResolvers();
    const firstBatches: number[] = [];
    const secondBatches: number[] = [];
    const first = processorKind(async (batch) => {
      firstBatches.push(batch.length);
      await gate;
      return batch.map((item) => outcome.emit(item));
    });
    const second = processorKind((batch) => {
      secondBatches.push(batch.length);
      return Promise.resolve(batch.map(() => outcome.none()));
    });
    const run = await WorkflowRun.start(
      workflow(
        [instance(COMPONENT_KINDS.INLET, 'in'), instance(COMPONENT_KINDS.MESSAGE_TRANSFORMER, 'first'), instance(COMPONENT_KINDS.LOGGER, 'second')],
        [
          ['in', 'first'],
          ['first', 'second'],
        ],
      ),
      {
        factories: new Map([
          [COMPONENT_KINDS.INLET, inletFactory],
          [COMPONENT_KINDS.MESSAGE_TRANSFORMER, first],
          [COMPONENT_KINDS.LOGGER, second],
        ]),
        logger,
        maxBatch: 32,
      },
    );
    // m0 is taken alone; m1..m5 wait behind it and are taken together once it is done
    await run.publish('in', message(0), new AbortController());
    await expect.poll(() => firstBatches).toEqual([1]);
    for (let n = 1; n <= 5; n++) await run.publish('in', message(n), new AbortController());
    release();
    expect(await run.stop(5000)).toBe(true);
    expect(firstBatches).toEqual([1, 5]);
    // the second component is waiting for work when each batch's outputs arrive: it takes them as they were made
    expect(secondBatches).toEqual([1, 5]);
  });

  it('retries transient failures max_retry times, then hands the message to the failure handler with error and original', async () => {
    const attempts = new Map<string, number>();
    const flaky = processorKind((batch) =>
      Promise.resolve(
        batch.map((item) => {
          const seen = (attempts.get(item.id) ?? 0) + 1;
          attempts.set(item.id, seen);
          if (item.body.n === 1) return outcome.fail('upstream answered 503', true);
          if (item.body.n === 2) return outcome.fail('bad request: no title', false);
          return seen <= 2 ? outcome.fail('upstream answered 503', true) : outcome.emit(item);
        }),
      ),
    );
    const handled: LoomMessage[] = [];
    const delivered: LoomMessage[] = [];
    const collect = (into: LoomMessage[]) => processorKind((batch) => (into.push(...batch), Promise.resolve(batch.map(() => outcome.none()))));
    const run = await WorkflowRun.start(
      workflow(
        [
          instance(COMPONENT_KINDS.INLET, 'in'),
          instance(COMPONENT_KINDS.HTTP_ENRICHER, 'flaky', { url: 'http://unused', max_retry: 3, delay: 5, failure_handler: 'errors' }),
          instance(COMPONENT_KINDS.LOGGER, 'out'),
          instance(COMPONENT_KINDS.MESSAGE_FILTER, 'errors', { script: 'return true', language: 'javascript' }),
        ],
        [
          ['in', 'flaky'],
          ['flaky', 'out'],
        ],
      ),
      {
        factories: new Map([
          [COMPONENT_KINDS.INLET, inletFactory],
          [COMPONENT_KINDS.HTTP_ENRICHER, flaky],
          [COMPONENT_KINDS.LOGGER, collect(delivered)],
          [COMPONENT_KINDS.MESSAGE_FILTER, collect(handled)],
        ]),
        logger,
      },
    );
    const withdrawal = new AbortController();
    for (const n of [0, 1, 2]) await run.publish('in', message(n), withdrawal);
    expect(await run.stop(5000)).toBe(true);
    expect(delivered.map((item) => item.id)).toEqual(['m0']);
    expect(attempts.get('m0')).toBe(3);
    expect(attempts.get('m1')).toBe(4);
    expect(attempts.get('m2')).toBe(1);
    expect(handled.map((item) => item.body)).toEqual([
      {
        failedComponent: 'flaky',
        messageId: 'm1',
        error: 'upstream answered 503',
        failure: { kind: 'unavailable', retryable: true },
        message: { id: 'm1', body: { n: 1, padding: '' }, headers: {} },
      },
      {
        failedComponent: 'flaky',
        messageId: 'm2',
        error: 'bad request: no title',
        failure: { kind: 'invalid-argument', retryable: false },
        message: { id: 'm2', body: { n: 2, padding: '' }, headers: {} },
      },
    ]);
    expect(run.counters().find((counters) => counters.name === 'flaky')).toMatchObject({
      messagesIn: 3,
      messagesOut: 1,
      messagesFailed: 2,
      messagesRetried: 5,
      lastError: 'bad request: no title',
    });
  });

  it('without a failure handler counts, logs and reports the failure; stop drains in-flight messages first', async () => {
    const slowFail = processorKind(async (batch) => {
      await sleep(20);
      return batch.map((item) => (item.body.n === 3 ? outcome.fail('no good') : outcome.none()));
    });
    const run = await inletTo('sink', slowFail, { maxBatch: 1 });
    const events: string[] = [];
    run.subscribe((event) => events.push(event.error === undefined ? event.state : `${event.component}: ${event.error}`));
    const withdrawal = new AbortController();
    for (let n = 0; n < 10; n++) await run.publish('in', message(n), withdrawal);
    expect(await run.stop(5000)).toBe(true);
    expect(run.counters()[1]).toMatchObject({ messagesIn: 10, messagesFailed: 1, lastError: 'no good', queueDepth: 0 });
    expect(events).toEqual(['STOPPING', 'sink: no good', 'STOPPED']);
    expect(logLines.some((line) => line.includes('message failed (no failure handler)') && line.includes('"messageId":"m3"'))).toBe(true);
  });

  it('delivers through an enricher whose server fails twice then answers (max_retry 3); one that always fails reaches the failure handler', async () => {
    const calls = new Map<string, number>();
    const server = createServer((request, response) => {
      const seen = (calls.get(request.url ?? '') ?? 0) + 1;
      calls.set(request.url ?? '', seen);
      if (request.url?.startsWith('/down') === true || seen <= 2) {
        response.writeHead(503).end();
        return;
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ label: `item ${request.url}` }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const delivered: LoomMessage[] = [];
      const handled: LoomMessage[] = [];
      const collect = (into: LoomMessage[]) => processorKind((batch) => (into.push(...batch), Promise.resolve(batch.map(() => outcome.none()))));
      const run = await WorkflowRun.start(
        workflow(
          [
            instance(COMPONENT_KINDS.INLET, 'in'),
            instance(COMPONENT_KINDS.HTTP_ENRICHER, 'flaky', { url: `${base}/items/{n}`, max_retry: 3, delay: 10 }),
            instance(COMPONENT_KINDS.HTTP_ENRICHER, 'down', { url: `${base}/down/{n}`, max_retry: 3, delay: 10, failure_handler: 'errors' }),
            instance(COMPONENT_KINDS.LOGGER, 'out'),
            instance(COMPONENT_KINDS.MESSAGE_FILTER, 'errors', { script: 'return true', language: 'javascript' }),
          ],
          [
            ['in', 'flaky'],
            ['in', 'down'],
            ['flaky', 'out'],
          ],
        ),
        {
          factories: new Map([
            [COMPONENT_KINDS.INLET, inletFactory],
            [COMPONENT_KINDS.HTTP_ENRICHER, enricherFactory],
            [COMPONENT_KINDS.LOGGER, collect(delivered)],
            [COMPONENT_KINDS.MESSAGE_FILTER, collect(handled)],
          ]),
          logger,
        },
      );
      await run.publish('in', message(7), new AbortController());
      expect(await run.stop(10_000)).toBe(true);
      expect(calls.get('/items/7')).toBe(3);
      expect(delivered.map((item) => item.body._enrichment)).toEqual([{ label: 'item /items/7' }]);
      expect(calls.get('/down/7')).toBe(4);
      expect(handled).toHaveLength(1);
      expect(handled[0]?.body).toMatchObject({
        failedComponent: 'down',
        messageId: 'm7',
        error: expect.stringContaining('answered 503') as unknown,
        message: { id: 'm7', body: { n: 7, padding: '' }, headers: {} },
      });
      expect(run.counters().find((counters) => counters.name === 'flaky')).toMatchObject({ messagesOut: 1, messagesRetried: 2, messagesFailed: 0 });
      expect(run.counters().find((counters) => counters.name === 'down')).toMatchObject({ messagesOut: 0, messagesRetried: 3, messagesFailed: 1 });
    } finally {
      server.close();
    }
  });
});

describe('workflow run inlets', () => {
  it('takes an inlet by its instance name, or by its plain name when one inlet alone has it (a compact file names it so)', async () => {
    const received: unknown[] = [];
    const sink = processorKind((batch) => {
      received.push(...batch.map((item) => item.body.n));
      return Promise.resolve(batch.map(() => outcome.none()));
    });
    const names = ['Documents_1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d', 'Twin_2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e', 'Twin_3c4d5e6f-7a8b-4c9d-8e0f-2a3b4c5d6e7f'];
    const run = await WorkflowRun.start(
      workflow(
        [...names.map((name) => instance(COMPONENT_KINDS.INLET, name)), instance(COMPONENT_KINDS.LOGGER, 'sink')],
        names.map((name): [string, string] => [name, 'sink']),
      ),
      {
        factories: new Map([
          [COMPONENT_KINDS.INLET, inletFactory],
          [COMPONENT_KINDS.LOGGER, sink],
        ]),
        logger,
      },
    );
    await run.publish('Documents', message(1), new AbortController());
    await run.publish(names[0] as string, message(2), new AbortController());
    await run.publish(names[1] as string, message(3), new AbortController());
    // two inlets share the plain name Twin: it names neither
    await expect(run.publish('Twin', message(4), new AbortController())).rejects.toThrow("inlet source of workflow 'run test' 'Twin' not found");
    expect(() => run.checkInlet('sink')).toThrow(/not found/);
    expect(await run.stop(5000)).toBe(true);
    expect(received).toEqual([1, 2, 3]);
  });
});

describe('workflow run life cycle', () => {
  const pipeline = (): WorkflowConfiguration => workflow([instance(COMPONENT_KINDS.INLET, 'in'), instance(COMPONENT_KINDS.LOGGER, 'sink')], [['in', 'sink']]);
  const started = (sink: ComponentFactory): Promise<WorkflowRun> =>
    WorkflowRun.start(pipeline(), {
      factories: new Map([
        [COMPONENT_KINDS.INLET, inletFactory],
        [COMPONENT_KINDS.LOGGER, sink],
      ]),
      logger,
    });
  const states = (run: WorkflowRun): string[] => {
    const seen: string[] = [];
    run.subscribe((event) => void (event.component === undefined && seen.push(`${event.state}${event.error === undefined ? '' : `: ${event.error}`}`)));
    return seen;
  };

  it('has the transition table of loom.v1.WorkflowState: STOPPED and FAILED are final', () => {
    expect(RUN_TRANSITIONS).toEqual({
      STARTING: ['RUNNING', 'FAILED'],
      RUNNING: ['STOPPING', 'PAUSED'],
      PAUSED: ['RUNNING', 'STOPPING'],
      STOPPING: ['STOPPED', 'FAILED'],
      STOPPED: [],
      FAILED: [],
    });
    const walk = new Lifecycle('run', RUN_TRANSITIONS, 'STOPPED');
    expect(() => walk.to('RUNNING')).toThrow(IllegalTransitionError);
  });

  it('stops once, whatever the number of stop calls: each answers the same end, and the states are STOPPING then STOPPED', async () => {
    const run = await started(processorKind((batch) => Promise.resolve(batch.map(() => outcome.none()))));
    const seen = states(run);
    const [first, second] = await Promise.all([run.stop(1_000), run.stop(1_000)]);
    expect([first, second, await run.stop(1_000)]).toEqual([true, true, true]);
    expect(seen).toEqual(['STOPPING', 'STOPPED']);
    expect(run.state).toBe('STOPPED');
  });

  it('fails when a processor throws ComponentFailedError: STOPPING then FAILED with the reason; a later stop changes nothing', async () => {
    const run = await started(processorKind(() => Promise.reject(new ComponentFailedError('the host is gone'))));
    const seen = states(run);
    const ended = new Promise<void>((resolve) => run.subscribe((event) => event.state === 'FAILED' && resolve()));
    await run.publish('in', message(1), new AbortController());
    await ended;
    const reason = "component 'sink' failed: the host is gone";
    expect(seen).toEqual([`STOPPING: ${reason}`, `FAILED: ${reason}`]);
    expect(run.error).toBe(reason);
    expect(await run.stop(1_000)).toBe(true);
    expect(run.state).toBe('FAILED');
    expect(run.counters().find((counters) => counters.name === 'sink')).toMatchObject({ messagesIn: 1, messagesFailed: 1, lastError: 'the host is gone' });
    await expect(run.publish('in', message(2), new AbortController())).rejects.toThrow('is FAILED, not RUNNING');
  });

  it('fails the start when a source reports a failure while the run is starting, closing what was built', async () => {
    let closed = 0;
    const dying: ComponentFactory = {
      kind: 'source',
      create: (context) =>
        Promise.resolve({
          start: () => {
            context.fail(new Error('the device is gone'));
            return Promise.resolve();
          },
          stop: () => Promise.resolve(),
        }),
    };
    const sink: ComponentFactory = {
      kind: 'processor',
      create: () => Promise.resolve({ process: () => Promise.resolve([]), close: () => Promise.resolve(void closed++) }),
    };
    await expect(
      WorkflowRun.start(pipeline(), {
        factories: new Map<string, ComponentFactory>([
          [COMPONENT_KINDS.INLET, dying],
          [COMPONENT_KINDS.LOGGER, sink],
        ]),
        logger,
      }),
    ).rejects.toThrow('the device is gone');
    expect(closed).toBe(1);
  });
});
