import { Writable } from 'node:stream';
import { COMPONENT_KINDS } from '@loom/domain';
import { createLogger } from '@loom/telemetry';
import { describe, expect, it } from 'vitest';
import { inletFactory } from '../components/inlet.js';
import { captureSink, instance, workflowOf } from '../../test/workflows.js';
import { type ComponentFactory, type Emit } from './component.js';
import { WorkflowRun } from './workflow-run.js';

const logger = createLogger({ level: 'silent', destination: new Writable({ write: (_chunk, _encoding, callback) => callback() }) });

/** A source the test drives: `emit` hands a message to the run as a timer's tick would. */
function drivenSource(): { factory: ComponentFactory; emit: Emit } {
  let started: Emit | undefined;
  return {
    factory: {
      kind: 'source',
      create: () => Promise.resolve({ start: (emit: Emit) => Promise.resolve(void (started = emit)), stop: () => Promise.resolve() }),
    },
    emit: (message, withdrawal) => started!(message, withdrawal),
  };
}

/** driven source `tick` and inlet `in` → sink `out`. */
async function startRun(): Promise<{ run: WorkflowRun; emit: Emit; received: () => string[] }> {
  const source = drivenSource();
  const sink = captureSink();
  const workflow = workflowOf(
    'pause test',
    [instance(COMPONENT_KINDS.TIMER, 'tick'), instance(COMPONENT_KINDS.INLET, 'in'), instance(COMPONENT_KINDS.LOGGER, 'out')],
    [
      ['tick', 'out'],
      ['in', 'out'],
    ],
  );
  const factories = new Map<string, ComponentFactory>([
    [COMPONENT_KINDS.TIMER, source.factory],
    [COMPONENT_KINDS.INLET, inletFactory],
    [COMPONENT_KINDS.LOGGER, sink.factory],
  ]);
  const run = await WorkflowRun.start(workflow, { factories, logger });
  return { run, emit: source.emit, received: () => sink.received.map((message) => message.id) };
}

describe('a paused run (PauseWorkflow, in memory)', () => {
  it('holds its sources’ messages until resumed, then takes them in order, and refuses publishes while paused', async () => {
    const { run, emit, received } = await startRun();
    const states: string[] = [];
    run.subscribe((event) => states.push(event.state));
    await emit({ id: 'before', body: {}, headers: {} });
    await expect.poll(received).toEqual(['before']);

    await run.pause();
    expect(run.state).toBe('PAUSED');
    let accepted = false;
    const held = emit({ id: 'while paused', body: {}, headers: {} }).then(() => (accepted = true));
    await expect(run.publish('in', { id: 'published', body: {}, headers: {} }, { signal: new AbortController().signal })).rejects.toThrow(
      "workflow 'pause test' is PAUSED, not RUNNING",
    );
    // the run is idle and the held message has not gone in: a second pause changes nothing
    await run.pause();
    expect(accepted).toBe(false);
    expect(received()).toEqual(['before']);

    await run.resume();
    await held;
    await expect.poll(received).toEqual(['before', 'while paused']);
    expect(states).toEqual(['PAUSED', 'RUNNING']);
    await run.stop(1000);
  });

  it('stops while paused: a message held at the pause is refused, the run ends STOPPED', async () => {
    const { run, emit } = await startRun();
    await run.pause();
    const held = emit({ id: 'held', body: {}, headers: {} });
    expect(await run.stop(1000)).toBe(true);
    await expect(held).rejects.toThrow("workflow 'pause test' is stopping");
    expect(run.state).toBe('STOPPED');
    await run.resume();
    expect(run.state).toBe('STOPPED');
  });
});
