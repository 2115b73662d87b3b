import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RESOURCE_KINDS } from '@loom/domain';
import { type EmbeddedPostgres } from '@loom/postgres';
import { startNeo4j } from '@loom/testing';
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

/** The Neo4j server a test file runs on, and how to reach it. */
export interface TestNeo4j {
  readonly uri: string;
  readonly user: string;
  readonly password: string;
  readonly database?: string;
  /** Where it came from, for test names: `LOOM_TEST_NEO4J_URI` or the launched server's version. */
  readonly origin: string;
  close(): Promise<void>;
}

/**
 * The server of LOOM_TEST_NEO4J_URI (with LOOM_TEST_NEO4J_USER, _PASSWORD, _DATABASE) when set, else an embedded
 * Neo4j 5.26 Community started for this file (startNeo4j: LOOM_NEO4J_LAUNCHER, which `npm test` provides).
 */
export async function startTestNeo4j(): Promise<TestNeo4j> {
  const uri = process.env['LOOM_TEST_NEO4J_URI'];
  if (uri !== undefined && uri !== '') {
    const database = process.env['LOOM_TEST_NEO4J_DATABASE'] || undefined;
    return {
      uri,
      user: process.env['LOOM_TEST_NEO4J_USER'] || 'neo4j',
      password: process.env['LOOM_TEST_NEO4J_PASSWORD'] ?? '',
      ...(database === undefined ? {} : { database }),
      origin: `LOOM_TEST_NEO4J_URI (${uri})`,
      close: () => Promise.resolve(),
    };
  }
  const server = await startNeo4j();
  return { uri: server.uri, user: server.user, password: server.password, origin: `embedded Neo4j Community at ${server.uri}`, close: () => server.close() };
}

export { closedPort } from '@loom/testing';
