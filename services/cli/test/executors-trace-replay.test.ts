import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ExecutorClient, WorkflowState } from '@loom/contracts';
import { keptStreamName, MESSAGE_ID_HEADER } from '@loom/messaging';
import { EXECUTOR_STATUS_BUCKET } from '@loom/executor';
import { call, createClient } from '@loom/service-kit';
import {
  checkedWorkflowText,
  CLUSTER_CONTROL_ARGUMENTS,
  clusterExecutorArguments,
  natsServerBinary,
  type NatsTestServer,
  startNatsServer,
} from '@loom/testing';
import { connect } from 'nats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type InProcessLoom, runCli, startLoom } from './loom-in-process.js';

/**
 * Issue 50 with several executors: a control loom and two executors, all in this process, share workflows through one
 * nats-server. `loom message trace` asked of either executor shows a message's whole path: its failure on the executor
 * that took it in, its retry on the other. `loom workflow replay` asked of one sends each kept message again exactly once
 * through the current version, whichever executor takes it, and says how many it sent.
 */
const binary = natsServerBinary('trace and replay across executors (services/cli/test/executors-trace-replay.test.ts)');

const TRACED = 'Traced across';
const REPLAYED = 'Replayed across';
const DOCUMENTS = 20;
const { RUNNING } = { RUNNING: WorkflowState.WORKFLOW_STATE_RUNNING };
/** Both executors keep what they processed for replay; their trail keeps what the test traces. */
const EXECUTOR_SETTINGS = [
  'loom.messaging.stream.keepProcessedMs=3600000',
  'loom.messaging.stream.duplicateWindowMs=600000',
  'loom.log.level=warn',
  // an executor the status board shows that does not answer is given up on after this
  'loom.executor.messageTrace.peerTimeoutMs=500',
];

interface TracedEvent {
  readonly kind: string;
  readonly component: string;
  readonly messageId: string;
  readonly workflowVersion: number;
  readonly executorId: string;
}

interface Trace {
  readonly events: TracedEvent[];
  readonly executorId: string;
  readonly executors: string[];
  readonly unanswered: string[];
}

describe.skipIf(binary === undefined)('two executors on one nats-server: message trace and replay', () => {
  let nats: NatsTestServer;
  let control: InProcessLoom;
  const executors: InProcessLoom[] = [];
  const clients: ExecutorClient[] = [];

  /** Runs `loom` against `target` (the control loom takes pushes; an executor answers the rest). */
  const cli = (target: InProcessLoom, ...args: string[]) => runCli(['--address', target.address, ...args]);
  async function cliJson<T>(target: InProcessLoom, ...args: string[]): Promise<T> {
    const result = await cli(target, '--output', 'json', ...args);
    expect(result.stderr, result.stderr).toBe('');
    return JSON.parse(result.stdout) as T;
  }

  /** Starts one more executor of the cluster, `executor-<n>`. */
  async function addExecutor(): Promise<InProcessLoom> {
    const settings = [`loom.executor.id=executor-${executors.length + 1}`, ...EXECUTOR_SETTINGS].flatMap((setting) => ['--set', setting]);
    const executor = await startLoom([...clusterExecutorArguments(control.address, nats.url), ...settings]);
    executors.push(executor);
    clients.push(createClient(ExecutorClient, executor.address, { retry: false, deadlineMs: 60_000 }));
    return executor;
  }

  /** Each executor's own part of a workflow, as it answers: its state and the messages its `Done` took in. */
  async function parts(workflow: string): Promise<{ state: WorkflowState; done: number }[]> {
    return Promise.all(
      clients.map(async (client) => {
        const status = await call(client, 'getWorkflowStatus', { name: workflow }).catch(() => undefined);
        const own = status?.executors.find((part) => part.executorId === status.executorId);
        const done = own?.components.find((component) => component.name.startsWith('Done'))?.messagesIn ?? 0;
        return { state: own?.state ?? WorkflowState.WORKFLOW_STATE_UNSPECIFIED, done: Number(done) };
      }),
    );
  }
  const states = async (workflow: string) => (await parts(workflow)).map((part) => part.state);
  const doneInAll = async (workflow: string) => (await parts(workflow)).reduce((sum, part) => sum + part.done, 0);

  /** Pushes the workflow with `script` to the control loom, and (re)starts it on every executor. */
  async function pushAndStart(name: string, script: string, restart: boolean): Promise<void> {
    const file = join(control.dataDirectory, `${name.replaceAll(' ', '-')}.workflow.yaml`);
    writeFileSync(file, checkedWorkflowText(name, script));
    expect((await cli(control, 'workflow', 'push', file)).status).toBe(0);
    if (restart) expect((await cli(executors[0]!, 'workflow', 'stop', name)).stderr).toBe('');
    expect((await cli(executors[0]!, 'workflow', 'start', name)).stderr).toBe('');
    await expect.poll(() => states(name), { timeout: 60_000 }).toEqual(executors.map(() => RUNNING));
  }

  const publish = (executor: number, workflow: string, ids: readonly string[]) =>
    call(clients[executor]!, 'publishMessages', {
      workflowName: workflow,
      inlet: 'In',
      messages: ids.map((id) => ({ messageId: id, body: { n: Number(id.split('-')[1]) }, headers: {} })),
    });

  beforeAll(async () => {
    nats = await startNatsServer({ binary: binary! });
    control = await startLoom(CLUSTER_CONTROL_ARGUMENTS);
    await addExecutor();
  });
  afterAll(async () => {
    for (const client of clients) client.close();
    for (const executor of executors) await executor.stop();
    await control?.stop();
    await nats?.close();
  });

  it('traces a message that failed on one executor and was retried on the other, asked of either', async () => {
    // executor-1 alone runs the workflow: it takes the message in and fails it
    await pushAndStart(TRACED, "if (body.n === 3) throw new Error('three is refused'); return body;", false);
    await publish(0, TRACED, ['m-1', 'm-2', 'm-3']);
    const failed = async () =>
      (await cliJson<{ messages: { messageId: string }[] }>(executors[0]!, 'failures', 'list', TRACED)).messages.map((kept) => kept.messageId);
    await expect.poll(failed, { timeout: 30_000 }).toEqual(['m-3']);

    // executor-2 joins; the fix is pushed and the workflow restarted on both; the retry is asked of executor-2
    await addExecutor();
    await pushAndStart(TRACED, 'return body;', true);
    const retried = await cli(executors[1]!, 'failures', 'retry', TRACED, '--all');
    expect(retried.stderr).toBe('');
    await expect.poll(async () => (await parts(TRACED))[1]?.done, { timeout: 30_000 }).toBe(1);

    const expected = [
      ['accepted', 'In', 1, 'executor-1'],
      ['failed', 'Check', 1, 'executor-1'],
      ['retried', 'Check', 2, 'executor-2'],
      ['processed', 'Check', 2, 'executor-2'],
      ['processed', 'Done', 2, 'executor-2'],
    ];
    for (const [index, executor] of executors.entries()) {
      const trace = await cliJson<Trace>(executor, 'message', 'trace', 'm-3', '--workflow', TRACED);
      expect(trace.executorId).toBe(`executor-${index + 1}`);
      expect([...trace.executors].sort()).toEqual(['executor-1', 'executor-2']);
      expect(trace.unanswered).toEqual([]);
      expect(trace.events.map((event) => [event.kind, event.component, event.workflowVersion, event.executorId])).toStrictEqual(expected);
    }
    const text = await cli(executors[1]!, 'message', 'trace', 'm-3');
    expect(text.stderr).toBe('');
    expect(text.stdout).toContain(`message 'm-3' in ${TRACED}: 5 events on executors executor-2, executor-1`);
    expect(text.stdout).toMatch(/failed\s+Check\s+m-3\s+1\s+1\s+executor-1\s+invalid-argument: .*three is refused/);

    // an executor the status board shows that does not answer (its row written here, no executor behind it: NATS
    // answers 'no responders' at once, a live but silent one would be given up on after peerTimeoutMs): the trace
    // answers what the others recorded and names it
    const connection = await connect({ servers: nats.url });
    try {
      const board = await (
        await connection.jetstream().views.kv(EXECUTOR_STATUS_BUCKET)
      ).put('ghost.executor-ghost', JSON.stringify({ executorId: 'executor-ghost', workflow: 'ghost', state: 'RUNNING', components: [] }));
      expect(board).toBeGreaterThan(0);
      const partial = await cliJson<Trace>(executors[0]!, 'message', 'trace', 'm-3', '--workflow', TRACED);
      expect(partial.events).toHaveLength(expected.length);
      expect(partial.unanswered).toEqual(['executor-ghost']);
      expect([...partial.executors].sort()).toEqual(['executor-1', 'executor-2']);
      await (await connection.jetstream().views.kv(EXECUTOR_STATUS_BUCKET)).purge('ghost.executor-ghost');
    } finally {
      await connection.close();
    }

    // never seen on either: NOT_FOUND naming both
    const unknown = await cli(executors[0]!, 'message', 'trace', 'never-seen');
    expect(unknown.status).not.toBe(0);
    expect(unknown.stderr).toContain("no events of message 'never-seen' on executors 'executor-1', 'executor-2'");
  });

  it('replays each kept message exactly once through the current version, whichever executor takes it', async () => {
    await pushAndStart(REPLAYED, 'return { ...body, version: 1 };', false);
    // one call a message, to either executor: each is a JetStream message of its own, taken by either
    const ids = Array.from({ length: DOCUMENTS }, (_, n) => `d-${n}`);
    for (const [n, id] of ids.entries()) await publish(n % 2, REPLAYED, [id]);
    await expect.poll(() => doneInAll(REPLAYED), { timeout: 60_000 }).toBe(DOCUMENTS);

    await pushAndStart(REPLAYED, 'return { ...body, version: 2 };', true);
    const replayed = await cliJson<{ replayed: number; duplicates: number }>(executors[1]!, 'workflow', 'replay', REPLAYED, '--since', '1h');
    expect(replayed).toMatchObject({ replayed: DOCUMENTS, duplicates: 0 });
    // the restarted parts count from 0: every replayed message processed once, on one executor or the other
    await expect.poll(() => doneInAll(REPLAYED), { timeout: 60_000 }).toBe(DOCUMENTS);
    // each kept message went through version 2 once, on one executor or the other (the shared consumer hands them to
    // both: 10 and 10 in the runs so far): a replayed message's id is `<its id>:replay:<kept sequence>`
    // (kept-messages.ts), its trace asked of executor-1 whichever executor took it
    const [stored] = (await cliJson<{ name: string }[]>(control, 'workflow', 'list')).filter((workflow) => workflow.name.startsWith(REPLAYED));
    const connection = await connect({ servers: nats.url });
    try {
      const manager = await connection.jetstreamManager();
      for (let seq = 1; seq <= DOCUMENTS; seq++) {
        const kept = await manager.streams.getMessage(keptStreamName(stored!.name), { seq });
        const id = `${kept.header.get(MESSAGE_ID_HEADER)}:replay:${seq}`;
        const trace = await cliJson<Trace>(executors[0]!, 'message', 'trace', id, '--workflow', REPLAYED);
        expect(
          trace.events.map((event) => [event.kind, event.component, event.workflowVersion]),
          id,
        ).toStrictEqual([
          ['accepted', 'In', 2],
          ['processed', 'Check', 2],
          ['processed', 'Done', 2],
        ]);
      }
    } finally {
      await connection.close();
    }
    // the same replay again, asked of the other executor: within the duplicate window nothing is sent twice
    const again = await cliJson<{ replayed: number; duplicates: number }>(executors[0]!, 'workflow', 'replay', REPLAYED, '--since', '1h');
    expect(again).toMatchObject({ replayed: 0, duplicates: DOCUMENTS });
    expect(await doneInAll(REPLAYED)).toBe(DOCUMENTS);
  });
});
