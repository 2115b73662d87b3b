import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type WatchRunResponse, WorkflowState } from '@loom/contracts';
import { COMPONENT_KINDS, type ComponentInstance, findResourceDefinition, RESOURCE_KINDS, type ResourceInstance } from '@loom/domain';
import { workflowToProto } from '@loom/domain/proto';
import { call } from '@loom/service-kit';
import { afterEach, describe, expect, it } from 'vitest';
import { componentFailureEvents, type ExecutorHarness, instance, startExecutor, workflowOf } from './harness.js';

const harnesses: ExecutorHarness[] = [];
const directories: string[] = [];
afterEach(async () => {
  for (const harness of harnesses.splice(0)) await harness.stop();
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

async function start(extra: readonly string[] = []): Promise<ExecutorHarness> {
  const harness = await startExecutor(extra);
  harnesses.push(harness);
  return harness;
}

function scratch(): string {
  const directory = mkdtempSync(join(tmpdir(), 'loom-run-failure-'));
  directories.push(directory);
  return directory;
}

/** Pushes and starts a workflow of these components, each linked to the next; answers its stored name. */
async function pushAndStartChain(harness: ExecutorHarness, workflowName: string, components: ComponentInstance[]): Promise<string> {
  const links = components.slice(1).map((component, index): [string, string] => [components[index]!.name, component.name]);
  const workflow = workflowOf(workflowName, components, links);
  const put = await call(harness.store, 'putWorkflow', { workflow: workflowToProto(workflow) });
  const name = put.summary?.name ?? workflow.name;
  const started = await call(harness.executor, 'startWorkflow', { name });
  expect(started.state).toBe(WorkflowState.WORKFLOW_STATE_RUNNING);
  return name;
}

/** Follows WatchRun from now until the stream ends (the run ended); answers every event. */
/** Watches a run; resolves once the stream is open (its first event, the current state, has come) with the promise of every event to its end. */
function watch(harness: ExecutorHarness, name: string): Promise<{ ended: Promise<WatchRunResponse[]> }> {
  return new Promise((opened, reject) => {
    const events: WatchRunResponse[] = [];
    const stream = harness.executor.watchRun({ name });
    // an error before the first event fails the watch; one after it fails `ended`
    const ended = new Promise<WatchRunResponse[]>((resolve, fail) => {
      stream.on('end', () => resolve(events));
      stream.on('error', (error) => (events.length === 0 ? reject(error) : fail(error)));
    });
    stream.on('data', (event: WatchRunResponse) => {
      events.push(event);
      if (events.length === 1) opened({ ended });
    });
  });
}

/** The run-level events (no component), as `STATE: error`. */
function runEvents(events: readonly WatchRunResponse[]): string[] {
  return events.filter((event) => event.component === '').map((event) => `${WorkflowState[event.state].replace('WORKFLOW_STATE_', '')}: ${event.error}`);
}

const publish = (harness: ExecutorHarness, name: string, inlet: string, body: Record<string, unknown>) =>
  call(harness.executor, 'publishMessage', { workflowName: name, inlet, body, headers: {}, messageId: '' });

const INLET = 'In_0b1c2d3e-4f5a-4b6c-8d7e-9f0a1b2c3d4e';
const SINK = 'Out_1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f';

describe('a run whose component dies outside a single message goes FAILED, with the reason in status and WatchRun', () => {
  it('a source that throws: the file reader whose directory is removed', async () => {
    const harness = await start();
    const inbox = join(scratch(), 'inbox');
    mkdirSync(inbox);
    const reader = 'Files_2d3e4f5a-6b7c-4d8e-9f0a-1b2c3d4e5f6a';
    const name = await pushAndStartChain(harness, 'Vanishing inbox_3e4f5a6b-7c8d-4e9f-8a0b-1c2d3e4f5a6b', [
      instance(COMPONENT_KINDS.FILE_READER, reader, { directory: inbox }),
      instance(COMPONENT_KINDS.LOGGER, SINK),
    ]);
    const { ended: events } = await watch(harness, name);
    rmSync(inbox, { recursive: true });

    const received = await events;
    const ended = runEvents(received);
    const message = `${reader}.options.directory: '${inbox}' is not an existing directory`;
    const reason = `component '${reader}' failed: ${message}`;
    expect(ended.slice(-2)).toEqual([`STOPPING: ${reason}`, `FAILED: ${reason}`]);
    // the component failure that ended the run, typed: the directory must exist again, and then a new run may succeed
    const failure = { kind: 'failed-precondition', retryable: true, message, cause: `DirectoryNotFoundError: ${message}` };
    expect(received.slice(-2).map((event) => event.failure)).toEqual([failure, failure]);
    const status = await call(harness.executor, 'getWorkflowStatus', { name });
    expect(status.state).toBe(WorkflowState.WORKFLOW_STATE_FAILED);
    expect(status.lastError).toBe(reason);
    // a watcher that comes after the end is told the state, the reason and the failure at once
    const late = await (await watch(harness, name)).ended;
    expect(runEvents(late)).toEqual([`FAILED: ${reason}`]);
    expect(late[0]?.failure).toEqual(failure);
  });

  it('a graph store that stays unreachable past max_retry: the graph writer', async () => {
    const harness = await start();
    // a port that was bound and closed: nothing listens there
    const port = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, '127.0.0.1', () => {
        const { port: bound } = server.address() as { port: number };
        server.close(() => resolve(bound));
      });
    });
    const definition = findResourceDefinition(RESOURCE_KINDS.AGE_DATABASE);
    const resource: ResourceInstance = {
      name: 'Graph_4f5a6b7c-8d9e-4f0a-8b1c-2d3e4f5a6b7c',
      resource: definition as ResourceInstance['resource'],
      parameters: { host: '127.0.0.1', port, user: 'postgres', graph: 'gone_graph' },
    };
    const writer = 'Writer_5a6b7c8d-9e0f-4a1b-8c2d-3e4f5a6b7c8d';
    const name = await pushAndStartChain(harness, 'Unreachable graph_6b7c8d9e-0f1a-4b2c-8d3e-4f5a6b7c8d9e', [
      instance(COMPONENT_KINDS.INLET, INLET),
      { ...instance(COMPONENT_KINDS.GRAPH_DATABASE_WRITER, writer, { query: 'CREATE (n:Lost {id: $id})', max_retry: 2, delay: 10 }), resource },
    ]);
    const { ended: events } = await watch(harness, name);
    await publish(harness, name, INLET, { id: 1 });

    const ended = runEvents(await events);
    expect(ended.at(-1)).toMatch(new RegExp(`^FAILED: component '${writer}' failed: .*ECONNREFUSED.* \\(still unreachable after 2 retries\\)$`));
    const status = await call(harness.executor, 'getWorkflowStatus', { name });
    expect(status.state).toBe(WorkflowState.WORKFLOW_STATE_FAILED);
    expect(status.lastError).toBe(ended.at(-1)?.replace(/^FAILED: /, ''));
    expect(status.components.find((component) => component.name === writer)).toMatchObject({ messagesIn: 1, messagesRetried: 2, messagesFailed: 1 });
  });

  it('a script host that cannot be restarted: its working directory is gone when the host must be replaced', async () => {
    const harness = await start(['loom.scripts.timeLimitMs=1000']);
    const script =
      "import os\nif body['op'] == 'where':\n    raise ValueError(os.getcwd())\nif body['op'] == 'hang':\n    while True:\n        pass\nreturn body";
    const transformer = 'Script_7c8d9e0f-1a2b-4c3d-8e4f-5a6b7c8d9e0f';
    const name = await pushAndStartChain(harness, 'Homeless script_8d9e0f1a-2b3c-4d4e-9f5a-6b7c8d9e0f1a', [
      instance(COMPONENT_KINDS.INLET, INLET),
      instance(COMPONENT_KINDS.MESSAGE_TRANSFORMER, transformer, { script, language: 'python' }),
      instance(COMPONENT_KINDS.LOGGER, SINK),
    ]);
    const { ended: events } = await watch(harness, name);
    // the script tells where its host works (the run's private directory), then the machine loses that directory
    await publish(harness, name, INLET, { op: 'where' });
    let privateDir = '';
    await expect
      .poll(
        async () => {
          const status = await call(harness.executor, 'getWorkflowStatus', { name });
          privateDir = /^ValueError: (.+)$/.exec(status.components.find((component) => component.name === transformer)?.lastError ?? '')?.[1] ?? '';
          return privateDir;
        },
        { timeout: 30_000 },
      )
      .not.toBe('');
    rmSync(privateDir, { recursive: true, force: true });
    // over the time limit: the host is killed; the next message needs a new host, which cannot start
    await publish(harness, name, INLET, { op: 'hang' });
    await publish(harness, name, INLET, { op: 'fine' });

    const ended = runEvents(await events);
    expect(ended.at(-1)).toMatch(new RegExp(`^FAILED: component '${transformer}' failed: the Python script host could not be restarted: `));
    const status = await call(harness.executor, 'getWorkflowStatus', { name });
    expect(status.state).toBe(WorkflowState.WORKFLOW_STATE_FAILED);
    expect(status.lastError).toBe(ended.at(-1)?.replace(/^FAILED: /, ''));
    expect(status.components.find((component) => component.name === transformer)).toMatchObject({ messagesIn: 3, messagesFailed: 3 });
    // a failing script component is audited, the message that found no host as much as the others
    const audited = async () => (await componentFailureEvents(harness, name)).map((event) => event.reason);
    await expect.poll(async () => (await audited()).length, { timeout: 10_000 }).toBe(3);
    expect(await audited()).toEqual([
      expect.stringMatching(/^ValueError: /),
      'the script ran longer than the time limit of 1000 ms',
      expect.stringMatching(/^the Python script host could not be restarted: /),
    ]);
  });
});
