import { type GraphStore } from '@loom/graph';
import { natsServerBinary, type NatsTestServer, type Neo4jTestServer, startNatsServer, startNeo4j } from '@loom/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  cleanGraphOf,
  clientsOf,
  ensureRunning,
  graphWorkflow,
  messageCount,
  messageIds,
  messageNodes,
  publishIds,
  pushWorkflow,
} from './durable-workflows.js';
import { type ExecutorCluster, neo4jGraph, neo4jGraphStore, startExecutorCluster, writtenBy } from './executor-cluster.js';
import { type LoomProcess } from './loom-process.js';

/**
 * Issue 35's proofs from outside: three executor processes of the built `loom` binary share a workflow through one
 * nats-server, writing to one Neo4j server; executors are SIGKILLed mid-run and the graph is read back.
 */
const binary = natsServerBinary('executors sharing work (services/cli/test/executor-cluster.test.ts)');

/** Messages of the run; the figure. */
const MESSAGES = 20_000;
/** Messages in the graph after which the first executor is killed, then the second. */
const KILL_FIRST_AT = 5_000;
const KILL_SECOND_AT = 10_000;
/** A killed executor's deliveries come again after the consumer's ack wait: short here, so the run ends soon after. */
const ACK_WAIT_MS = 5_000;
/** The backlog drains through a 2-core machine shared with other suites. */
const DRAIN_MS = 180_000;

describe.skipIf(binary === undefined)('three executors share a workflow on NATS JetStream', () => {
  let nats: NatsTestServer;
  let neo4j: Neo4jTestServer;
  let cluster: ExecutorCluster;
  let graph: GraphStore;

  beforeAll(async () => {
    nats = await startNatsServer({ binary: binary! });
    neo4j = await startNeo4j();
    graph = await neo4jGraphStore(neo4j);
    cluster = await startExecutorCluster(nats.url, 3, [`loom.messaging.consumer.ackWaitMs=${ACK_WAIT_MS}`]);
  }, 300_000);
  afterAll(async () => {
    await cluster?.close();
    await graph?.close();
    await neo4j?.close();
    await nats?.close();
  });

  it(`loses no acknowledged message of ${MESSAGES.toLocaleString('en')} when two of three executors are SIGKILLed mid-run`, async () => {
    const workflow = graphWorkflow('Shared import', 1, 'shared_graph', [], neo4jGraph(neo4j));
    const [first, second, survivor] = cluster.executors as [LoomProcess, LoomProcess, LoomProcess];
    const publisher = clientsOf(survivor, cluster.control);
    try {
      await pushWorkflow(publisher.store, workflow);
      // every executor runs the workflow, reading the inlet's stream through the one durable consumer
      for (const executor of cluster.executors) {
        const clients = clientsOf(executor, cluster.control);
        await ensureRunning(clients.executor, workflow.name).finally(() => clients.close());
      }

      const ids = messageIds('shared', MESSAGES);
      // through the executor that lives: a publisher of a killed one would retry elsewhere, which is not the point here
      const publishing = publishIds(publisher.executor, workflow.name, ids, { onFailure: 'stop' });
      const shares = new Map<LoomProcess, number>();
      /** Waits until the graph holds `count` messages, then reads `victim`'s share and SIGKILLs it; answers the graph's count then. */
      const killAt = async (count: number, victim: LoomProcess): Promise<number> => {
        await expect.poll(() => messageCount(graph), { timeout: DRAIN_MS, interval: 100 }).toBeGreaterThanOrEqual(count);
        shares.set(victim, await writtenBy(victim, workflow.name));
        victim.child.kill('SIGKILL');
        expect((await victim.exited).signal).toBe('SIGKILL');
        return messageCount(graph);
      };
      const firstKilledAt = await killAt(KILL_FIRST_AT, first);
      const secondKilledAt = await killAt(KILL_SECOND_AT, second);
      const published = await publishing;
      expect(published.acknowledged).toEqual(new Set(ids));
      // both kills came in the middle: thousands were still to be written after each
      expect(secondKilledAt).toBeLessThan(MESSAGES);

      await expect.poll(() => messageCount(graph), { timeout: DRAIN_MS, interval: 500 }).toBeGreaterThanOrEqual(MESSAGES);
      const nodes = await messageNodes(graph);
      // every acknowledged message is one node, nothing else is: the graph of a run on one executor that never crashed
      expect(nodes.map(({ id, name }) => ({ id, name }))).toEqual(cleanGraphOf(ids));
      shares.set(survivor, await writtenBy(survivor, workflow.name));
      // each executor processed a share while it lived
      expect([...shares.values()].every((share) => share > 0)).toBe(true);
      const twice = nodes.filter((node) => node.deliveries > 1);
      console.log(
        `three executors, two SIGKILLed mid-run (at ${firstKilledAt.toLocaleString('en')} and ${secondKilledAt.toLocaleString('en')} in the graph): ` +
          `all ${nodes.length.toLocaleString('en')} acknowledged messages in the graph; written by each executor while it lived: ` +
          `${[first, second, survivor].map((executor) => (shares.get(executor) ?? 0).toLocaleString('en')).join(', ')}; ` +
          `${twice.length} delivered more than once, harmless under MERGE`,
      );
    } finally {
      publisher.close();
    }
  }, 400_000);
});
