import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@loom/config';
import { findResourceDefinition, RESOURCE_KINDS, type ResourceInstance } from '@loom/domain';
import { capturedLogger } from '@loom/service-kit/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { GraphStores } from '../src/components/graph-stores.js';

const root = mkdtempSync(join(tmpdir(), 'loom-graph-address-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const { logger } = capturedLogger();

/** An AGE resource on the executor's embedded graph. */
const embedded: ResourceInstance = {
  name: 'Graph_0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d',
  resource: findResourceDefinition(RESOURCE_KINDS.AGE_DATABASE)!,
  parameters: { host: 'embedded', user: 'postgres', graph: 'address_test' },
};

/** The executor's graph stores on a data directory, as one start of loom makes them. */
function storesOn(dataDir: string, port = 0): GraphStores {
  return new GraphStores(loadConfig({ env: {}, overrides: [`loom.embedded.graph.dataDir=${dataDir}`, `loom.embedded.graph.port=${port}`] }), logger);
}

/** Starts the embedded graph by a first use (a statement, which creates the resource's graph), and answers its status. */
async function started(stores: GraphStores): Promise<Awaited<ReturnType<GraphStores['embeddedGraphStatus']>>> {
  const store = await stores.open(embedded);
  try {
    await store.run('RETURN 1 AS one');
  } finally {
    await store.close();
  }
  return stores.embeddedGraphStatus();
}

describe("the executor's embedded graph address", () => {
  it('is the same after a restart on the same data directory, and known before the graph starts again', { timeout: 120_000 }, async () => {
    const dataDir = join(root, 'graphdata');
    const first = storesOn(dataDir);
    expect(await first.embeddedGraphStatus()).toEqual({ address: '', running: false, dataDirectory: dataDir, graphs: [] });
    const running = await started(first);
    expect(running).toMatchObject({ address: expect.stringMatching(/^127\.0\.0\.1:\d+$/), running: true, graphs: ['address_test'] });
    await first.close();

    // the next start of loom: the address is shown before the graph runs, and it runs there again
    const second = storesOn(dataDir);
    expect(await second.embeddedGraphStatus()).toEqual({ address: running.address, running: false, dataDirectory: dataDir, graphs: [] });
    expect((await started(second)).address).toBe(running.address);
    await second.close();
  });

  it('a configured port that is taken fails the first use in one line naming loom.embedded.graph.port', { timeout: 120_000 }, async () => {
    const squatter = await new Promise<Server>((resolve, reject) => {
      const server = createServer();
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve(server));
    });
    const port = (squatter.address() as { port: number }).port;
    const stores = storesOn(join(root, 'taken'), port);
    try {
      await expect(stores.open(embedded)).rejects.toThrow(
        `loom.embedded.graph.port ${port} is in use (EADDRINUSE): set loom.embedded.graph.port to a free port`,
      );
    } finally {
      await stores.close();
      await new Promise((resolve) => squatter.close(resolve));
    }
  });
});
