import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@loom/config';
import { COMPONENT_KINDS } from '@loom/domain';
import { type GraphStore } from '@loom/graph';
import { connectMessaging, type Messaging } from '@loom/messaging';
import { capturedLogger } from '@loom/service-kit/testing';
import { natsServerBinary, type NatsTestServer, startNatsServer } from '@loom/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GraphStores } from '../src/components/graph-stores.js';
import { componentFactories } from '../src/components/registry.js';
import { jetStreamIntake } from '../src/runtime/jetstream-intake.js';
import { WorkflowRun } from '../src/runtime/workflow-run.js';
import { durableSettings, durableState } from './durable.js';
import { type GraphBackend, startGraphBackend } from './graph-backends.js';
import { instance, workflowOf } from './workflows.js';

const binary = natsServerBinary('executor durable graph writes');

const INLET = 'Items_0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d';
const WRITER = 'Write items_1b2c3d4e-5f6a-4b7c-9d8e-0f1a2b3c4d5e';
const WORKFLOW = 'durable graph import';

describe.skipIf(binary === undefined)('a batching graph writer in durable mode, on a real nats-server and the embedded graph', () => {
  const root = mkdtempSync(join(tmpdir(), 'loom-durable-graph-'));
  const { logger } = capturedLogger();
  const config = loadConfig({ env: {}, overrides: [`loom.embedded.graph.dataDir=${join(root, 'embedded')}`] });
  const stores = new GraphStores(config, logger);
  let server: NatsTestServer;
  let backend: GraphBackend;
  let graph: GraphStore;
  let messaging: Messaging;

  beforeAll(async () => {
    server = await startNatsServer();
    messaging = await connectMessaging(durableSettings(server));
    backend = await startGraphBackend('AGE', root);
    graph = backend.store('durable_items');
    // a graph server starts in seconds, and much longer on a loaded machine
  }, 180_000);
  afterAll(async () => {
    await messaging?.close();
    await stores.close();
    await backend?.close();
    await server?.close();
    rmSync(root, { recursive: true, force: true });
  });

  const count = async (): Promise<number> => Number((await graph.run('MATCH (n:Item) RETURN count(n) AS total'))[0]?.total);

  it('acknowledges each message only once its batch is written, and a redelivered message MERGEs to the same node', async () => {
    const writer = {
      ...instance(COMPONENT_KINDS.GRAPH_DATABASE_WRITER, WRITER, {
        query: 'MERGE (n:Item {id: $id}) SET n.title = $title',
        batch_writes: true,
        batch_size: 8,
        // long enough that a batch goes out only once it is full
        aggregation_timeout: 600_000,
      }),
      resource: backend.resource('durable_items'),
    };
    const workflow = workflowOf(WORKFLOW, [instance(COMPONENT_KINDS.INLET, INLET), writer], [[INLET, WRITER]]);
    const run = await WorkflowRun.start(workflow, {
      factories: componentFactories(config, { graphStores: stores }),
      logger,
      intake: jetStreamIntake(messaging),
    });
    const publish = (id: number, messageId = `item-${id}`) =>
      run.publish(INLET, { id: messageId, body: { id, title: `item ${id}` }, headers: {} }, new AbortController(), true);
    try {
      for (let id = 1; id <= 5; id++) await publish(id);
      // five delivered into a batch of eight that is not full: nothing written, nothing acknowledged
      await expect.poll(() => durableState(server, WORKFLOW, INLET)).toMatchObject({ stored: 5, ackPending: 5, undelivered: 0 });
      expect(await count()).toBe(0);
      // three more fill the batch; the third of them says again what item 1 said, under another id (as a redelivery would)
      await publish(6);
      await publish(7);
      await publish(1, 'item-1-again');
      await expect
        .poll(() => durableState(server, WORKFLOW, INLET), { timeout: 30_000 })
        .toEqual({
          stored: 0,
          ackPending: 0,
          undelivered: 0,
          redelivered: 0,
          delivered: 8,
        });
      expect(await count()).toBe(7);
    } finally {
      await run.stop(5_000);
    }
  }, 60_000);
});
