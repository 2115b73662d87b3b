import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RESOURCE_KINDS } from '@loom/domain';
import { type EmbeddedPostgres } from '@loom/postgres';
import { startEmbeddedGraph, type GraphResource } from '../src/index.js';

/** An embedded PGlite+AGE on a fresh temp directory and port 0; close() stops it and removes the directory. */
export async function startTestGraph(): Promise<{ server: EmbeddedPostgres; close(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'loom-graph-'));
  const server = await startEmbeddedGraph({ dataDir: join(dir, 'pgdata'), port: 0 });
  return {
    server,
    async close() {
      await server.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** An AGE resource instance for host:port (the embedded server's user postgres, no password). */
export function ageResource(address: { host: string; port: number }, parameters: Record<string, unknown> = {}): GraphResource {
  return {
    resource: { qualifiedName: RESOURCE_KINDS.AGE_DATABASE },
    parameters: { host: address.host, port: address.port, user: 'postgres', password: '', graph: 'loom_graph', ...parameters },
  };
}

/** A Neo4j resource instance. */
export function neo4jResource(parameters: Record<string, unknown>): GraphResource {
  return {
    resource: { qualifiedName: RESOURCE_KINDS.NEO4J_DATABASE },
    parameters: { host: 'graph.example.com', user: 'neo4j', password: 's3cret-pw', ...parameters },
  };
}

export { closedPort } from '@loom/testing';
