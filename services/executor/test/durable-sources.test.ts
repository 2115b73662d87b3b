import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { COMPONENT_KINDS, type WorkflowConfiguration } from '@loom/domain';
import { connectMessaging, type Messaging } from '@loom/messaging';
import { capturedLogger } from '@loom/service-kit/testing';
import { natsServerBinary, type NatsTestServer, startNatsServer } from '@loom/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { fileReaderFactory, PROCESSED_SUFFIX } from '../src/components/file-reader.js';
import { timerFactory } from '../src/components/timer.js';
import { type ComponentFactory } from '../src/runtime/component.js';
import { jetStreamIntake } from '../src/runtime/jetstream-intake.js';
import { WorkflowRun } from '../src/runtime/workflow-run.js';
import { durableSettings, durableState, recordingSinks } from './durable.js';
import { instance, workflowOf } from './workflows.js';

const binary = natsServerBinary('executor durable sources');

/** `source` → `written`, the sink recording what it takes. */
function sourceTo(name: string, source: ReturnType<typeof instance>): WorkflowConfiguration {
  return workflowOf(name, [source, instance(COMPONENT_KINDS.LOGGER, 'written')], [[source.name, 'written']]);
}

describe.skipIf(binary === undefined)('sources in durable mode, on a real nats-server', () => {
  let server: NatsTestServer;
  const opened: Messaging[] = [];
  const runs: WorkflowRun[] = [];
  const directories: string[] = [];
  const { logger, lines } = capturedLogger();

  async function start(workflow: WorkflowConfiguration, source: ComponentFactory, sink: ComponentFactory): Promise<WorkflowRun> {
    const messaging = await connectMessaging(durableSettings(server));
    opened.push(messaging);
    const factories = new Map<string, ComponentFactory>([
      [COMPONENT_KINDS.TIMER, source],
      [COMPONENT_KINDS.FILE_READER, source],
      [COMPONENT_KINDS.LOGGER, sink],
    ]);
    const run = await WorkflowRun.start(workflow, { factories, logger, intake: jetStreamIntake(messaging) });
    runs.push(run);
    return run;
  }

  function directory(): string {
    const made = mkdtempSync(join(tmpdir(), 'loom-durable-files-'));
    directories.push(made);
    return made;
  }

  beforeAll(async () => {
    server = await startNatsServer();
  });
  afterEach(async () => {
    await Promise.all(runs.splice(0).map((run) => run.stop(0)));
    await Promise.all(opened.splice(0).map((messaging) => messaging.close()));
    for (const made of directories.splice(0)) rmSync(made, { recursive: true, force: true });
    if (!server.running) await server.start();
  });
  afterAll(async () => {
    await server?.close();
  });

  it('a timer’s ticks are stored in the stream, then flow from its consumer and are acknowledged once written', async () => {
    const sinks = recordingSinks();
    await start(sourceTo('ticking', instance(COMPONENT_KINDS.TIMER, 'clock', { period: 5, initial_delay: 0 })), timerFactory, sinks.factory);
    await expect.poll(() => sinks.written.length).toBeGreaterThanOrEqual(3);
    // acknowledged: delivered and no longer pending
    await expect.poll(() => durableState(server, 'ticking', 'clock').then((state) => state.delivered - state.ackPending)).toBeGreaterThanOrEqual(3);
    const state = await durableState(server, 'ticking', 'clock');
    expect(state.redelivered).toBe(0);
  });

  it('the file reader marks a file done once all its messages are stored, and they flow from its consumer', async () => {
    const sinks = recordingSinks();
    sinks.closeGate();
    const read = directory();
    writeFileSync(join(read, 'three.json'), JSON.stringify([{ n: 1 }, { n: 2 }, { n: 3 }]));
    await start(sourceTo('files', instance(COMPONENT_KINDS.FILE_READER, 'reader', { directory: read })), fileReaderFactory, sinks.factory);
    // the sink is held: nothing is written yet, yet the file is done, since its three messages are stored
    await expect.poll(() => existsSync(join(read, `three.json${PROCESSED_SUFFIX}`))).toBe(true);
    expect(sinks.written).toEqual([]);
    expect((await durableState(server, 'files', 'reader')).stored).toBe(3);
    sinks.open();
    await expect.poll(() => sinks.written.length).toBe(3);
    await expect.poll(() => durableState(server, 'files', 'reader')).toMatchObject({ stored: 0, ackPending: 0, delivered: 3 });
  });

  it('the file reader leaves a file in place when its messages cannot be stored (NATS is down)', async () => {
    const sinks = recordingSinks();
    const read = directory();
    await start(sourceTo('files down', instance(COMPONENT_KINDS.FILE_READER, 'reader', { directory: read })), fileReaderFactory, sinks.factory);
    await server.stop();
    writeFileSync(join(read, 'kept.json'), JSON.stringify({ n: 1 }));
    await expect.poll(() => lines.some((line) => line.includes('file reader stopped in the middle of a file')), { timeout: 15_000 }).toBe(true);
    expect(existsSync(join(read, 'kept.json'))).toBe(true);
    expect(existsSync(join(read, `kept.json${PROCESSED_SUFFIX}`))).toBe(false);
    expect(sinks.written).toEqual([]);
  }, 30_000);
});
