import { COMPONENT_KINDS, ResourceExhaustedError, type WorkflowConfiguration } from '@loom/domain';
import { createLogger } from '@loom/telemetry';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { inletFactory } from '../components/inlet.js';
import { instance, workflowOf } from '../../test/workflows.js';
import { type ComponentFactory, ComponentFailedError, type LoomMessage, outcome, type Processor } from './component.js';
import { ComponentError } from './component-error.js';
import { type RunOptions } from './options.js';
import { WorkflowRun } from './workflow-run.js';

const logger = createLogger({ level: 'silent', destination: new Writable({ write: (_chunk, _encoding, callback) => callback() }) });

/** What happened to the components, in order: `stop <name>` for a source, `close <name>` for a processor. */
type Journal = string[];

/** An inlet whose stops are written in the journal. */
function journaledInlet(journal: Journal, onStart?: (fail: (error: unknown) => void) => void): ComponentFactory {
  const factory = inletFactory;
  if (factory.kind !== 'inlet') throw new Error('the inlet factory makes inlets');
  return {
    kind: 'inlet',
    create: async (context) => {
      const inlet = await factory.create(context);
      return {
        start: async (emit) => {
          await inlet.start(emit);
          onStart?.(context.fail);
        },
        stop: () => {
          journal.push(`stop ${context.name}`);
          return inlet.stop();
        },
        publish: (message, withdrawal) => inlet.publish(message, withdrawal),
      };
    },
  };
}

/** A processor whose closes are written in the journal. */
function journaledProcessor(journal: Journal, process: Processor['process']): ComponentFactory {
  return {
    kind: 'processor',
    create: (context) =>
      Promise.resolve({
        process,
        close: () => {
          journal.push(`close ${context.name}`);
          return Promise.resolve();
        },
      }),
  };
}

/** inlet `in` → processor `work` (failure handler `errors`) → sink `out`. */
const pipeline = (): WorkflowConfiguration =>
  workflowOf(
    'ending test',
    [
      instance(COMPONENT_KINDS.INLET, 'in'),
      instance(COMPONENT_KINDS.HTTP_ENRICHER, 'work', { url: 'http://unused', failure_handler: 'errors' }),
      instance(COMPONENT_KINDS.LOGGER, 'out'),
      instance(COMPONENT_KINDS.MESSAGE_FILTER, 'errors', { script: 'return true', language: 'javascript' }),
    ],
    [
      ['in', 'work'],
      ['work', 'out'],
    ],
  );

function start(journal: Journal, work: Processor['process'], extra: Partial<RunOptions> = {}, inlet = journaledInlet(journal)): Promise<WorkflowRun> {
  const none: Processor['process'] = (batch) => Promise.resolve(batch.map(() => outcome.none()));
  return WorkflowRun.start(pipeline(), {
    factories: new Map([
      [COMPONENT_KINDS.INLET, inlet],
      [COMPONENT_KINDS.HTTP_ENRICHER, journaledProcessor(journal, work)],
      [COMPONENT_KINDS.LOGGER, journaledProcessor(journal, none)],
      [
        COMPONENT_KINDS.MESSAGE_FILTER,
        journaledProcessor(journal, extra.onOutput === undefined ? none : (batch) => Promise.resolve(batch.map((item) => outcome.emit(item)))),
      ],
    ]),
    logger,
    ...extra,
  });
}

const message = (n: number): LoomMessage => ({ id: `m${n}`, body: { n }, headers: {} });

/** Every component once: the source stopped first, then each processor closed. */
const ONCE = ['stop in', 'close work', 'close out', 'close errors'];

describe('ending a workflow run', () => {
  it('stop: the source is stopped once, then each processor closed once, however many stops are asked', async () => {
    const journal: Journal = [];
    const run = await start(journal, (batch) => Promise.resolve(batch.map((item) => outcome.emit(item))));
    await run.publish('in', message(1), new AbortController());
    await Promise.all([run.stop(1_000), run.stop(1_000)]);
    await run.stop(1_000);
    expect(run.state).toBe('STOPPED');
    expect(journal).toEqual(ONCE);
  });

  it('fail: a component that dies ends the run FAILED, each component stopped or closed once, also after a later stop', async () => {
    const journal: Journal = [];
    const run = await start(journal, () => Promise.reject(new ComponentFailedError('the host is gone')));
    const ended = new Promise<void>((resolve) => run.subscribe((event) => event.state === 'FAILED' && resolve()));
    await run.publish('in', message(1), new AbortController());
    await ended;
    await run.stop(1_000);
    expect(run.state).toBe('FAILED');
    expect(journal).toEqual(ONCE);
  });

  it('a failed start closes what it built, each component once', async () => {
    const journal: Journal = [];
    const dying = journaledInlet(journal, (fail) => fail(new Error('the device is gone')));
    await expect(start(journal, () => Promise.resolve([]), {}, dying)).rejects.toThrow('the device is gone');
    expect(journal).toEqual(ONCE);
  });
});

describe('a component failure', () => {
  it('reaches onFailure and the failure handler typed: kind, retryable and cause kept', async () => {
    const journal: Journal = [];
    const failures: { error: ComponentError; messageId: string }[] = [];
    const handled: LoomMessage[] = [];
    const rate = new ResourceExhaustedError('the upstream rate limit is spent');
    const run = await start(journal, (batch) => Promise.resolve(batch.map(() => outcome.fail('upstream refused: rate limit', true, rate))), {
      onFailure: (error, failed) => failures.push({ error, messageId: failed.id }),
      onOutput: (component, output) => void (component === 'errors' && handled.push(output)),
    });
    await run.publish('in', message(1), new AbortController());
    await run.stop(1_000);
    expect(failures).toHaveLength(1);
    const [failure] = failures;
    expect(failure?.messageId).toBe('m1');
    expect(failure?.error).toBeInstanceOf(ComponentError);
    expect(failure?.error).toMatchObject({ component: 'work', kind: 'resource-exhausted', retryable: true, message: 'upstream refused: rate limit' });
    expect(failure?.error.cause).toBe(rate);
    expect(handled.map((item) => item.body)).toEqual([
      {
        failedComponent: 'work',
        messageId: 'm1',
        error: 'upstream refused: rate limit',
        failure: { kind: 'resource-exhausted', retryable: true, cause: 'ResourceExhaustedError: the upstream rate limit is spent' },
        message: { id: 'm1', body: { n: 1 }, headers: {} },
      },
    ]);
  });

  it('thrown by a processor is retryable, with the thrown error as its cause', async () => {
    const thrown = new TypeError('cannot read the answer');
    const failures: ComponentError[] = [];
    const run = await start([], () => Promise.reject(thrown), { onFailure: (error) => failures.push(error) });
    await run.publish('in', message(1), new AbortController());
    await run.stop(1_000);
    expect(failures.map((error) => ({ kind: error.kind, retryable: error.retryable, cause: error.cause, text: error.message }))).toEqual([
      { kind: 'unavailable', retryable: true, cause: thrown, text: 'TypeError: cannot read the answer' },
    ]);
  });
});
