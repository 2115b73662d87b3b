import { mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { type PublishStreamResponse } from '@loom/contracts';
import { COMPONENT_KINDS, componentInstance } from '@loom/domain';
import { type GraphStore } from '@loom/graph';
import { sourceConsumerName, streamName } from '@loom/messaging';
import { call } from '@loom/service-kit';
import { natsServerBinary, type NatsTestServer, startNatsServer } from '@loom/testing';
import { connect } from 'nats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bodyOf,
  cleanGraphOf,
  clientsOf,
  embeddedGraphStore,
  ensureRunning,
  graphWorkflow,
  INLET,
  messageCount,
  messageIds,
  messageNodes,
  publishIds,
  pushAndStart,
  startDurableLoom,
} from './durable-workflows.js';
import { type LoomProcess, stopLoom } from './loom-process.js';

/**
 * Issue 34's proofs from outside: the built `loom` binary on a real nats-server (JetStream on file storage), killed,
 * restarted and retried as an operator would see it, the embedded graph read back. An acknowledged publish must never
 * be lost; a redelivery is harmless because the writer MERGEs; how many messages were delivered twice is printed.
 */
const binary = natsServerBinary('durable messages (services/cli/test/durable-messages.test.ts)');

/** Messages published into the crash run; the figure. */
const CRASH_MESSAGES = 10_000;
/** Acknowledged messages after which the executor is killed: mid-run, with thousands still to come. */
const KILL_AFTER = 4_000;
/** The executor has been killed or restarted; its backlog drains through a 2-core machine shared with other suites. */
const DRAIN_MS = 150_000;

describe.skipIf(binary === undefined)('durable messages on NATS JetStream, the loom binary killed and restarted', () => {
  let nats: NatsTestServer;
  beforeAll(async () => {
    nats = await startNatsServer({ binary: binary! });
  });
  afterAll(async () => {
    await nats?.close();
  });

  it(`loses no acknowledged message when the executor is SIGKILLed while ${CRASH_MESSAGES.toLocaleString('en')} are published`, async () => {
    const data = mkdtempSync(join(tmpdir(), 'loom-crash-'));
    const graph = 'crash_graph';
    const workflow = graphWorkflow('Crash import', 1, graph);
    const ids = messageIds('crash', CRASH_MESSAGES);

    let loom: LoomProcess | undefined = await startDurableLoom(data, nats.url);
    let clients = clientsOf(loom);
    let store: GraphStore | undefined;
    try {
      await pushAndStart(clients, workflow);
      store = await embeddedGraphStore(loom, graph);
      const killed = loom;
      let killedAt: number | undefined;
      const beforeCrash = await publishIds(clients.executor, workflow.name, ids, {
        onFailure: 'stop',
        onAcknowledged: (count) => {
          if (killedAt === undefined && count >= KILL_AFTER) {
            killedAt = count;
            killed.child.kill('SIGKILL');
          }
        },
      });
      expect((await killed.exited).signal).toBe('SIGKILL');
      expect(beforeCrash.acknowledged.size).toBeGreaterThanOrEqual(KILL_AFTER);
      expect(beforeCrash.unacknowledged.length).toBeGreaterThan(0);
      clients.close();
      await store.close();

      // the same data directory and NATS: the workflow is resumed (or started again) and drains what JetStream kept
      loom = await startDurableLoom(data, nats.url);
      clients = clientsOf(loom);
      await ensureRunning(clients.executor, workflow.name);
      store = await embeddedGraphStore(loom, graph);
      // the publisher sends again what it was never answered for, as any client does after an error
      const afterCrash = await publishIds(clients.executor, workflow.name, beforeCrash.unacknowledged, { onFailure: 'retry' });
      const acknowledged = new Set([...beforeCrash.acknowledged, ...afterCrash.acknowledged]);
      expect(acknowledged).toEqual(new Set(ids));

      const drained = store;
      await expect.poll(() => messageCount(drained), { timeout: DRAIN_MS, interval: 500 }).toBeGreaterThanOrEqual(CRASH_MESSAGES);
      const nodes = await messageNodes(store);
      // every acknowledged message is one node, nothing else is: the graph of a run that never crashed
      expect(nodes.map(({ id, name }) => ({ id, name }))).toEqual(cleanGraphOf(ids));
      const twice = nodes.filter((node) => node.deliveries > 1);
      const extra = twice.reduce((sum, node) => sum + node.deliveries - 1, 0);
      console.log(
        `durable messages, SIGKILL mid-run: ${beforeCrash.acknowledged.size.toLocaleString('en')} of ${CRASH_MESSAGES.toLocaleString('en')} acknowledged ` +
          `before the kill (killed after ${killedAt}), ${afterCrash.acknowledged.size.toLocaleString('en')} published again after the restart ` +
          `(${afterCrash.duplicates} answered duplicate: stored before the kill); all ${nodes.length.toLocaleString('en')} in the graph; ` +
          `${twice.length} delivered more than once (${extra} extra deliveries), harmless under MERGE`,
      );
    } finally {
      clients.close();
      await store?.close();
      await stopLoom(loom);
    }
  }, 300_000);

  describe('one loom on the same NATS server', () => {
    let loom: LoomProcess;
    let clients: ReturnType<typeof clientsOf>;
    const data = mkdtempSync(join(tmpdir(), 'loom-durable-'));
    beforeAll(async () => {
      loom = await startDurableLoom(data, nats.url);
      clients = clientsOf(loom);
    });
    afterAll(async () => {
      clients?.close();
      await stopLoom(loom);
    });

    it('loses no acknowledged message when the NATS server is SIGKILLed mid-publish and started again', async () => {
      const graph = 'restart_graph';
      const workflow = graphWorkflow('NATS restart', 2, graph);
      await pushAndStart(clients, workflow);
      const store = await embeddedGraphStore(loom, graph);
      try {
        const ids = messageIds('restart', 3_000);
        let restarted: Promise<void> | undefined;
        const published = await publishIds(clients.executor, workflow.name, ids, {
          onFailure: 'retry',
          onAcknowledged: (count) => {
            // a crash of nats-server (file storage, its default sync_interval): what it acknowledged is in its files
            if (restarted === undefined && count >= 1_000) restarted = nats.restart({ kill: true });
          },
        });
        await restarted;
        expect(restarted).toBeDefined();
        expect(published.acknowledged).toEqual(new Set(ids));
        await expect.poll(() => messageCount(store), { timeout: DRAIN_MS, interval: 500 }).toBeGreaterThanOrEqual(ids.length);
        const nodes = await messageNodes(store);
        expect(nodes.map(({ id, name }) => ({ id, name }))).toEqual(cleanGraphOf(ids));
        const twice = nodes.filter((node) => node.deliveries > 1).length;
        console.log(
          `durable messages, NATS SIGKILLed mid-run: all ${ids.length.toLocaleString('en')} acknowledged are in the graph; ${twice} delivered more than once`,
        );
      } finally {
        await store.close();
      }
    }, 240_000);

    it('stores a publish retried with the same id once, answered duplicate, on all three gRPC paths', async () => {
      const graph = 'dedup_graph';
      const workflow = graphWorkflow('Retried publish', 3, graph);
      await pushAndStart(clients, workflow);
      const store = await embeddedGraphStore(loom, graph);
      try {
        const publish = (messageId: string) =>
          call(clients.executor, 'publishMessage', { workflowName: workflow.name, inlet: INLET, body: bodyOf(messageId), headers: {}, messageId });
        expect(await publish('dup-1')).toEqual({ messageId: 'dup-1', duplicate: false });
        expect(await publish('dup-1')).toEqual({ messageId: 'dup-1', duplicate: true });

        const batch = await call(clients.executor, 'publishMessages', {
          workflowName: workflow.name,
          inlet: INLET,
          messages: ['dup-1', 'dup-2'].map((messageId) => ({ body: bodyOf(messageId), headers: {}, messageId })),
        });
        expect(batch.results.map((result) => [result.messageId, result.accepted, result.duplicate])).toEqual([
          ['dup-1', true, true],
          ['dup-2', true, false],
        ]);

        const stream = clients.executor.publishStream();
        const answered = once(stream, 'data') as Promise<[PublishStreamResponse]>;
        stream.write({ workflowName: workflow.name, inlet: INLET, messages: [{ body: bodyOf('dup-2'), headers: {}, messageId: 'dup-2' }] });
        const [response] = await answered;
        stream.end();
        expect(response.results.map((result) => [result.messageId, result.duplicate])).toEqual([['dup-2', true]]);

        // a last message after the retries: once it is written, anything stored before it was delivered too
        expect(await publish('dup-3')).toEqual({ messageId: 'dup-3', duplicate: false });
        await expect.poll(() => messageCount(store), { timeout: 60_000, interval: 250 }).toBe(3);
        expect(await messageNodes(store)).toEqual(['dup-1', 'dup-2', 'dup-3'].map((id) => ({ id, name: `message ${id}`, deliveries: 1 })));
      } finally {
        await store.close();
      }
    }, 120_000);

    it('terminates a message that fails past max_retry: tried 1 + max_retry times, then never delivered again', async () => {
      const attempts = new Map<string, number>();
      // an endpoint of the tests' own: answers 503 (a transient failure, retried) for the poisoned message, 200 otherwise
      const endpoint: Server = createServer((request, response) => {
        const id = decodeURIComponent(request.url?.split('/').pop() ?? '');
        attempts.set(id, (attempts.get(id) ?? 0) + 1);
        response.writeHead(id.startsWith('poison') ? 503 : 200, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ checked: id }));
      });
      endpoint.listen(0, '127.0.0.1');
      await once(endpoint, 'listening');
      const { port } = endpoint.address() as { port: number };
      const maxRetry = 2;
      const check = componentInstance(COMPONENT_KINDS.HTTP_ENRICHER, 'check', {
        url: `http://127.0.0.1:${port}/check/{id}`,
        target_field: 'check',
        max_retry: maxRetry,
        delay: 10,
      });
      const graph = 'retry_graph';
      const workflow = graphWorkflow('Failing past max_retry', 4, graph, [check]);
      await pushAndStart(clients, workflow);
      const store = await embeddedGraphStore(loom, graph);
      const connection = await connect({ servers: nats.url });
      try {
        const published = await publishIds(clients.executor, workflow.name, ['fine-1', 'poison-1', 'fine-2'], { onFailure: 'stop', batch: 1, callers: 1 });
        expect(published.acknowledged.size).toBe(3);
        await expect.poll(() => messageCount(store), { timeout: 60_000, interval: 250 }).toBe(2);
        await expect.poll(() => attempts.get('poison-1'), { timeout: 60_000, interval: 100 }).toBe(1 + maxRetry);

        // JetStream holds nothing of the inlet's any more: the poisoned message was terminated, not left to come back
        const jetStream = await connection.jetstreamManager();
        const consumerInfo = () => jetStream.consumers.info(streamName(workflow.name), sourceConsumerName(INLET));
        await expect
          .poll(
            async () => {
              const info = await consumerInfo();
              return { pending: info.num_pending, unacknowledged: info.num_ack_pending, delivered: info.delivered.stream_seq };
            },
            { timeout: 60_000, interval: 250 },
          )
          .toEqual({ pending: 0, unacknowledged: 0, delivered: 3 });

        // a later message goes through the same consumer, and the poisoned one was still tried only 1 + max_retry times
        await publishIds(clients.executor, workflow.name, ['fine-3'], { onFailure: 'stop', batch: 1, callers: 1 });
        await expect.poll(() => messageCount(store), { timeout: 60_000, interval: 250 }).toBe(3);
        const { num_redelivered: redelivered, num_ack_pending: unacknowledged } = await consumerInfo();
        expect({ redelivered, unacknowledged, poisonAttempts: attempts.get('poison-1') }).toEqual({
          redelivered: 0,
          unacknowledged: 0,
          poisonAttempts: 1 + maxRetry,
        });
        expect(attempts.get('fine-1')).toBe(1);
      } finally {
        await connection.close();
        await store.close();
        endpoint.close();
      }
    }, 120_000);
  });
});
