import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lastEmbeddedGraphPort, startEmbeddedGraph } from '../src/index.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'loom-graph-port-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A TCP server holding 127.0.0.1:port, as another program would. */
function occupy(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

describe('the embedded graph keeps its port in its data directory', () => {
  it(
    'keeps the port it listened on, and when that one is taken by the next start listens on another, saying so in one line',
    { timeout: 120_000 },
    async () => {
      const dataDir = join(dir, 'graphdata');
      const warnings: string[] = [];
      const logger = { info: () => undefined, warn: (_fields: object, message: string) => warnings.push(message) };
      const rememberPort = { setting: 'loom.embedded.graph.port' };

      const first = await startEmbeddedGraph({ dataDir, rememberPort, logger });
      const port = first.port;
      await first.close();
      expect(await lastEmbeddedGraphPort(dataDir)).toBe(port);

      expect(warnings).toEqual([]);
      // the same port again at the next start: services/executor/test/embedded-graph-address.test.ts, through the executor

      const squatter = await occupy(port);
      let moved: number;
      try {
        const third = await startEmbeddedGraph({ dataDir, rememberPort, logger });
        moved = third.port;
        await third.close();
      } finally {
        await new Promise((resolve) => squatter.close(resolve));
      }
      expect(moved).not.toBe(port);
      expect(warnings).toEqual([
        `the port ${port} it listened on before is taken, so it listens on ${moved} now: set loom.embedded.graph.port to a free port to keep one`,
      ]);
      // the new port is the one kept for the next start
      expect(await lastEmbeddedGraphPort(dataDir)).toBe(moved);
    },
  );
});
