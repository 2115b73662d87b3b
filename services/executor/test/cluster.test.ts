import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ExecutorClient, type GetWorkflowStatusResponse, WorkflowState } from '@loom/contracts';
import { COMPONENT_KINDS, type WorkflowConfiguration } from '@loom/domain';
import { workflowToProto } from '@loom/domain/proto';
import { call, createClient, type RunningServices } from '@loom/service-kit';
import { capturedLogger, serveForTest } from '@loom/service-kit/testing';
import { jetStreamToken, LEASE_BUCKET } from '@loom/messaging';
import { natsServerBinary, type NatsTestServer, startNatsServer } from '@loom/testing';
import { connect, type NatsConnection } from 'nats';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { executorModule } from '../src/index.js';
import { type ExecutorHarness, executorToken, instance, startExecutor, workflowOf } from './harness.js';

const binary = natsServerBinary('executors sharing workflows');

/** Short, so a source moves quickly when its holder leaves; long enough for a loaded machine to renew in time. */
const LEASE_MS = 1500;

/** How long the executors may take to agree on a loaded machine (an upper bound, not a figure under test). */
const AGREE = { timeout: 30_000 };

const INLET = 'Feed_5a6b7c8d-9e0f-4a1b-8c2d-3e4f5a6b7c8d';
const SINK = 'Log_6b7c8d9e-0f1a-4b2c-9d3e-4f5a6b7c8d9e';
const TIMER = 'Clock_7c8d9e0f-1a2b-4c3d-8e4f-5a6b7c8d9e0f';
const PUBLISHER = 'Ticks out_8d9e0f1a-2b3c-4d4e-9f5a-6b7c8d9e0f1a';

/** One executor process's worth: the executor service alone, on NATS, reaching the stack's other services. */
interface Member {
  readonly id: string;
  readonly client: ExecutorClient;
  readonly running: RunningServices;
  closed: boolean;
}

const { RUNNING, PAUSED, STOPPED } = {
  RUNNING: WorkflowState.WORKFLOW_STATE_RUNNING,
  PAUSED: WorkflowState.WORKFLOW_STATE_PAUSED,
  STOPPED: WorkflowState.WORKFLOW_STATE_STOPPED,
};

/** Each executor's state of a workflow as a member sees it: `{ b: RUNNING, c: RUNNING }`. */
async function states(member: Member, workflow: string): Promise<Record<string, WorkflowState>> {
  const status = await call(member.client, 'getWorkflowStatus', { name: workflow }).catch(() => undefined);
  return Object.fromEntries((status?.executors ?? []).map((part) => [part.executorId, part.state]));
}

describe.skipIf(binary === undefined)('executors sharing workflows through one nats-server', () => {
  let server: NatsTestServer;
  /** The config store, secrets and audit the members reach (its own executor keeps messages in memory: not a member). */
  let stack: ExecutorHarness;
  let observer: NatsConnection;
  const members: Member[] = [];
  const directory = mkdtempSync(join(tmpdir(), 'loom-cluster-'));

  async function member(id: string, extra: readonly string[] = []): Promise<Member> {
    const address = `127.0.0.1:${stack.running.port}`;
    const running = await serveForTest(
      [executorModule],
      [
        ...(['config-store', 'secrets', 'audit', 'skill-gateway'] as const).map((service) => `loom.services.${service}.address=${address}`),
        `loom.auth.tokens.executor=${executorToken}`,
        'loom.experimental.enabled=true',
        `loom.data.directory=${join(directory, id)}`,
        `loom.messaging.nats.servers=${server.url}`,
        `loom.executor.id=${id}`,
        `loom.messaging.lease.timeMs=${LEASE_MS}`,
        ...extra,
      ],
      { logger: capturedLogger().logger },
    );
    const made: Member = { id, running, client: createClient(ExecutorClient, `127.0.0.1:${running.port}`, { retry: false }), closed: false };
    members.push(made);
    return made;
  }

  async function leave(leaving: Member): Promise<void> {
    if (leaving.closed) return;
    leaving.closed = true;
    leaving.client.close();
    await leaving.running.stop();
  }

  async function push(workflow: WorkflowConfiguration): Promise<void> {
    await call(stack.store, 'putWorkflow', { workflow: workflowToProto(workflow) });
  }

  beforeAll(async () => {
    server = await startNatsServer();
    stack = await startExecutor([`loom.data.directory=${join(directory, 'stack')}`]);
    observer = await connect({ servers: server.url });
  }, 120_000);
  afterEach(async () => {
    for (const made of members.splice(0)) await leave(made);
  });
  afterAll(async () => {
    await observer?.close();
    await stack?.stop();
    await server?.close();
    rmSync(directory, { recursive: true, force: true });
  });

  it('a start on one runs on all, a later executor joins, status shows each and the totals, and a stop on another stops all', async () => {
    const name = 'Shared feed_1f2a3b4c-5d6e-4f7a-8b9c-0d1e2f3a4b5c';
    await push(workflowOf(name, [instance(COMPONENT_KINDS.INLET, INLET), instance(COMPONENT_KINDS.LOGGER, SINK, { level: 'debug' })], [[INLET, SINK]]));
    const [b, c, d] = [await member('b'), await member('c'), await member('d')];
    const started = await call(b.client, 'startWorkflow', { name });
    expect(started.state).toBe(RUNNING);
    for (const seen of [b, c, d]) await expect.poll(() => states(seen, name), AGREE).toEqual({ b: RUNNING, c: RUNNING, d: RUNNING });
    // a second start anywhere starts nothing: the cluster runs it already, and that run is answered
    expect(await call(c.client, 'startWorkflow', { name })).toMatchObject({ state: RUNNING, alreadyRunning: true });
    // a workflow the cluster does not run is told as it is: not stored at all
    await expect(call(c.client, 'getWorkflowStatus', { name: 'etl' })).rejects.toMatchObject({ details: "no workflow named 'etl'" });

    const e = await member('e');
    await expect.poll(() => states(e, name), AGREE).toEqual({ b: RUNNING, c: RUNNING, d: RUNNING, e: RUNNING });

    const messages = Array.from({ length: 40 }, (_, n) => ({ body: { n }, headers: {}, messageId: `m-${n}` }));
    const { results } = await call(d.client, 'publishMessages', { workflowName: name, inlet: INLET, messages });
    expect(results.every((result) => result.accepted)).toBe(true);
    // every message is taken by one executor: the totals count each once, the parts add up to them
    const sinkTotal = async (): Promise<number[]> => {
      const status: GetWorkflowStatusResponse = await call(c.client, 'getWorkflowStatus', { name });
      const parts = status.executors.map((part) => part.components.find((component) => component.name === SINK)?.messagesIn ?? 0);
      return [status.components.find((component) => component.name === SINK)?.messagesIn ?? 0, parts.reduce((sum, count) => sum + count, 0)];
    };
    await expect.poll(sinkTotal, AGREE).toEqual([40, 40]);

    const stopped = await call(c.client, 'stopWorkflow', { name, drainTimeout: { seconds: 5, nanos: 0 } });
    expect(stopped.state).toBe(STOPPED);
    for (const seen of [b, c, d, e]) {
      await expect.poll(() => states(seen, name), AGREE).toEqual({ b: STOPPED, c: STOPPED, d: STOPPED, e: STOPPED });
    }
    const status = await call(b.client, 'getWorkflowStatus', { name });
    expect(status).toMatchObject({ state: STOPPED, executorId: 'b' });
  });

  it('an executor leaving stops only its own run: the workflow goes on running on the others, and pauses and resumes on all', async () => {
    const name = 'Lasting feed_2a3b4c5d-6e7f-4a8b-9c0d-1e2f3a4b5c6d';
    await push(workflowOf(name, [instance(COMPONENT_KINDS.INLET, INLET), instance(COMPONENT_KINDS.LOGGER, SINK, { level: 'debug' })], [[INLET, SINK]]));
    const [b, c, d] = [await member('b'), await member('c'), await member('d')];
    await call(b.client, 'startWorkflow', { name });
    await expect.poll(() => states(c, name), AGREE).toEqual({ b: RUNNING, c: RUNNING, d: RUNNING });
    await leave(b);
    await expect.poll(() => states(c, name), AGREE).toEqual({ c: RUNNING, d: RUNNING });
    const status = await call(d.client, 'getWorkflowStatus', { name });
    expect(status.state).toBe(RUNNING);
    const { results } = await call(c.client, 'publishMessages', {
      workflowName: name,
      inlet: INLET,
      messages: [{ body: { n: 1 }, headers: {}, messageId: 'after' }],
    });
    expect(results[0]?.accepted).toBe(true);

    // a pause on one reaches the other, and so does a resume from the other
    expect((await call(d.client, 'pauseWorkflow', { name })).state).toBe(PAUSED);
    await expect.poll(() => states(c, name), AGREE).toEqual({ c: PAUSED, d: PAUSED });
    expect((await call(c.client, 'getWorkflowStatus', { name })).state).toBe(PAUSED);
    expect((await call(c.client, 'resumeWorkflow', { name })).state).toBe(RUNNING);
    await expect.poll(() => states(d, name), AGREE).toEqual({ c: RUNNING, d: RUNNING });
    await call(d.client, 'stopWorkflow', { name, drainTimeout: { seconds: 5, nanos: 0 } });
  });

  it('a start that fails on one executor is shown there as FAILED with its reason; the others run the workflow', async () => {
    const name = 'Scripted_4c5d6e7f-8a9b-4c0d-9e1f-3a4b5c6d7e8f';
    const script = 'Upper_5d6e7f8a-9b0c-4d1e-8f2a-4b5c6d7e8f9a';
    await push(
      workflowOf(
        name,
        [instance(COMPONENT_KINDS.INLET, INLET), instance(COMPONENT_KINDS.MESSAGE_TRANSFORMER, script, { script: 'return body;', language: 'javascript' })],
        [[INLET, script]],
      ),
    );
    const b = await member('b');
    const c = await member('c', ['loom.experimental.enabled=false']);
    await call(b.client, 'startWorkflow', { name });
    await expect.poll(() => states(b, name), AGREE).toEqual({ b: RUNNING, c: WorkflowState.WORKFLOW_STATE_FAILED });
    const status = await call(b.client, 'getWorkflowStatus', { name });
    expect(status.state).toBe(RUNNING);
    expect(status.executors.find((part) => part.executorId === 'c')?.lastError).toContain('loom.experimental.enabled=true');
    await call(c.client, 'stopWorkflow', { name, drainTimeout: { seconds: 5, nanos: 0 } });
    await expect.poll(() => states(b, name), AGREE).toMatchObject({ b: STOPPED });
  });

  it('a timer runs on exactly one executor at a time and moves to another when its holder leaves', async () => {
    const name = 'Ticking_3b4c5d6e-7f8a-4b9c-8d0e-2f3a4b5c6d7e';
    const subject = `cluster.ticks.${process.pid}`;
    await push(
      workflowOf(
        name,
        [
          instance(COMPONENT_KINDS.TIMER, TIMER, { period: 40, initial_delay: 0 }),
          instance(COMPONENT_KINDS.NATS_PUBLISHER, PUBLISHER, { servers: server.url, subject }),
        ],
        [[TIMER, PUBLISHER]],
      ),
    );
    const ticks: { tick: number; time: string }[] = [];
    const subscription = observer.subscribe(subject, {
      callback: (_error, message) => ticks.push(message.json<{ tick: number; time: string }>()),
    });
    const joined = [await member('b'), await member('c'), await member('d')];
    await call(joined[0]!.client, 'startWorkflow', { name });
    await expect.poll(() => ticks.length, AGREE).toBeGreaterThanOrEqual(5);

    // the holder as the lease bucket names it leaves; another takes the timer over
    const holderOf = async (): Promise<string | undefined> => {
      const bucket = await observer.jetstream().views.kv(LEASE_BUCKET, { bindOnly: true });
      return (await bucket.get(`${jetStreamToken(name)}.${jetStreamToken(TIMER)}`))?.string();
    };
    const first = await holderOf();
    const holder = joined.find((candidate) => candidate.id === first)!;
    await leave(holder);
    const before = ticks.length;
    await expect.poll(async () => (await holderOf()) ?? first, AGREE).not.toBe(first);
    await expect.poll(() => ticks.length, AGREE).toBeGreaterThanOrEqual(before + 5);
    await call(joined.find((candidate) => !candidate.closed)!.client, 'stopWorkflow', { name, drainTimeout: { seconds: 5, nanos: 0 } });
    subscription.unsubscribe();

    // in the order they were made (redeliveries removed), each tick follows the one before or begins a new holder's count:
    // two holders at once would interleave their counts
    const unique = [...new Map(ticks.map((tick) => [`${tick.time} ${tick.tick}`, tick])).values()].sort((one, other) => one.time.localeCompare(other.time));
    const breaks = unique.flatMap((tick, index) => (index > 0 && tick.tick !== unique[index - 1]!.tick + 1 ? [tick.tick] : []));
    expect(breaks.every((tick) => tick === 1)).toBe(true);
    expect(breaks.length).toBeGreaterThanOrEqual(1);
  });
});
