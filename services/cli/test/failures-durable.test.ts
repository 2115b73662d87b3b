import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { COMPONENT_KINDS, componentInstance } from '@loom/domain';
import { type GraphStore } from '@loom/graph';
import { call } from '@loom/service-kit';
import { natsServerBinary, type NatsTestServer, startNatsServer } from '@loom/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  cleanGraphOf,
  clientsOf,
  embeddedGraphStore,
  ensureRunning,
  graphWorkflow,
  messageCount,
  messageIds,
  messageNodes,
  publishIds,
  pushAndStart,
  pushWorkflow,
  startDurableLoom,
} from './durable-workflows.js';
import { runCli } from './loom-in-process.js';
import { type LoomProcess, stopLoom } from './loom-process.js';

/**
 * Issue 50, the failure store in durable mode: the `loom` binary on a real nats-server, a JavaScript script that throws
 * for every tenth message in front of a graph writer on the embedded graph. The executor is SIGKILLed once failures
 * are being kept (some may still be on their way); the restarted one finishes the rest, the store holds exactly the
 * hundred, and after the fixed script is pushed `loom failures retry --all` brings the graph to all 1,000 messages,
 * each retried one written once, and empties the store.
 */
const binary = natsServerBinary('the failure store in durable mode (services/cli/test/failures-durable.test.ts)');
const MESSAGES = 1000;
const DRAIN_MS = 120_000;

function checkScript(fixed: boolean): ReturnType<typeof componentInstance> {
  const script = fixed
    ? 'return body;'
    : "const n = Number(String(body.id).split('-')[1]); if (n % 10 === 9) throw new Error('the tenth message ' + body.id); return body;";
  return componentInstance(COMPONENT_KINDS.MESSAGE_TRANSFORMER, 'Check', { script, language: 'javascript' });
}

describe.skipIf(binary === undefined)('the failure store in durable mode, the executor killed between failure and retry', () => {
  let nats: NatsTestServer;
  let data: string;
  beforeAll(async () => {
    nats = await startNatsServer({ binary: binary! });
    data = mkdtempSync(join(tmpdir(), 'loom-failures-durable-'));
  });
  afterAll(async () => {
    await nats?.close();
    rmSync(data, { recursive: true, force: true });
  });

  it('keeps the hundred failed messages in JetStream across a SIGKILL, and retries them into the graph once each', async () => {
    const graph = 'failures_graph';
    const broken = graphWorkflow('Tenth fails', 1, graph, [checkScript(false)]);
    const fixed = graphWorkflow('Tenth fails', 1, graph, [checkScript(true)]);
    const ids = messageIds('f', MESSAGES);
    const failing = ids.filter((id) => Number(id.split('-')[1]) % 10 === 9);
    const total = async (client: ReturnType<typeof clientsOf>): Promise<number> =>
      (await call(client.executor, 'listFailedMessages', { filter: { workflow: broken.name, component: '', kind: '' }, pageSize: 1, pageToken: '' })).total;

    let loom: LoomProcess | undefined = await startDurableLoom(data, nats.url);
    let clients = clientsOf(loom);
    let store: GraphStore | undefined;
    try {
      await pushAndStart(clients, broken);
      store = await embeddedGraphStore(loom, graph);
      const published = await publishIds(clients.executor, broken.name, ids, { onFailure: 'stop' });
      expect(published.acknowledged.size).toBe(MESSAGES);
      const first = clients;
      await expect.poll(() => total(first), { timeout: DRAIN_MS, interval: 100 }).toBeGreaterThanOrEqual(20);
      const keptBeforeKill = await messageCount(store);
      const killed = loom;
      killed.child.kill('SIGKILL');
      expect((await killed.exited).signal).toBe('SIGKILL');
      clients.close();
      await store.close();

      // the same data directory and NATS: the run resumes and finishes what JetStream still held for it
      loom = await startDurableLoom(data, nats.url);
      clients = clientsOf(loom);
      await ensureRunning(clients.executor, broken.name);
      store = await embeddedGraphStore(loom, graph);
      const second = clients;
      const graphed = store;
      await expect.poll(() => messageCount(graphed), { timeout: DRAIN_MS, interval: 500 }).toBe(MESSAGES - failing.length);
      await expect.poll(() => total(second), { timeout: DRAIN_MS, interval: 200 }).toBe(failing.length);
      const listed = await call(clients.executor, 'listFailedMessages', {
        filter: { workflow: broken.name, component: '', kind: '' },
        pageSize: 1000,
        pageToken: '',
      });
      expect(listed.countsByKind).toEqual({ 'invalid-argument': failing.length });
      expect(listed.messages.map((message) => message.messageId).sort()).toEqual(failing);

      // the fix: stopped, pushed, started again; every failed message retried through it
      await call(clients.executor, 'stopWorkflow', { name: broken.name });
      await pushWorkflow(clients.store, fixed);
      await ensureRunning(clients.executor, fixed.name);
      const retried = await runCli(['--address', loom.address, 'failures', 'retry', fixed.name, '--all']);
      expect(retried.stderr).toBe('');
      expect(retried.stdout.trim()).toBe(`retried ${failing.length} failed messages of '${fixed.name}'`);
      await expect.poll(() => messageCount(graphed), { timeout: DRAIN_MS, interval: 500 }).toBe(MESSAGES);
      await expect.poll(() => total(second), { timeout: DRAIN_MS, interval: 200 }).toBe(0);
      const nodes = await messageNodes(store);
      expect(nodes.map(({ id, name }) => ({ id, name }))).toEqual(cleanGraphOf(ids));
      // nothing doubled: each retried message was written once
      expect(nodes.filter((node) => failing.includes(node.id) && node.deliveries !== 1)).toEqual([]);
      const redelivered = nodes.filter((node) => node.deliveries > 1).length;
      console.log(
        `failure store, durable: killed with ${keptBeforeKill} of ${MESSAGES - failing.length} written; after the restart ${failing.length} kept, ` +
          `${redelivered} others written twice (JetStream redelivery of deliveries unsettled at the kill); ${failing.length} retried, each written once`,
      );
    } finally {
      clients.close();
      await store?.close();
      await stopLoom(loom);
    }
  });
});
