import { join } from 'node:path';
import { findResourceDefinition, RESOURCE_KINDS, type ResourceInstance } from '@loom/domain';
import { type GraphStore, openGraphStore, startEmbeddedGraph } from '@loom/graph';
import { neo4jResourceParameters, startNeo4j } from '@loom/testing';

/** The graph databases the executor's Cypher is tested on: the embedded AGE graph and a real Neo4j server. */
export const GRAPH_BACKENDS = ['AGE', 'Neo4j'] as const;

/** One of GRAPH_BACKENDS. */
export type GraphBackendName = (typeof GRAPH_BACKENDS)[number];

/** What a test may name of a resource on a backend. */
export interface BackendResourceOptions {
  /** The resource's name (a workflow refers to it by name). */
  readonly name?: string;
  /** Parameters over the backend's own (host, port, read_only...). */
  readonly parameters?: Record<string, unknown>;
}

/** A graph database server started for one test file, and resources on it. */
export interface GraphBackend {
  readonly name: GraphBackendName;
  /** The server's loopback address, for a FaultProxy in front of it. */
  readonly host: string;
  readonly port: number;
  /**
   * A resource on the server. `graph` is a graph of its own on AGE; Neo4j Community has one database, so on Neo4j
   * every graph is that one, and a test that counts what it wrote clears it first.
   */
  resource(graph: string, options?: BackendResourceOptions): ResourceInstance;
  /** A store on a graph of the server, closed with the backend. */
  store(graph: string): GraphStore;
  /**
   * Deletes every node and relationship of every graph handed out so far. Indexes stay, as they do between a
   * workflow's runs; on Neo4j making them again (`startNeo4j`'s `clear()` drops them) was most of a test's time.
   */
  clear(): Promise<void>;
  /** Closes the stores and stops the server. */
  close(): Promise<void>;
}

/** Starts a server of the backend; an AGE one keeps its data in `directory`. */
export async function startGraphBackend(name: GraphBackendName, directory: string): Promise<GraphBackend> {
  return name === 'AGE' ? startAge(directory) : startNeo4jBackend();
}

function definitionOf(kind: string) {
  const definition = findResourceDefinition(kind);
  if (definition === undefined) throw new Error(`no ${kind} resource in the catalog`);
  return definition;
}

async function startAge(directory: string): Promise<GraphBackend> {
  const server = await startEmbeddedGraph({ dataDir: join(directory, 'age-server'), port: 0 });
  const definition = definitionOf(RESOURCE_KINDS.AGE_DATABASE);
  const resource = (graph: string, options: BackendResourceOptions = {}): ResourceInstance => ({
    name: options.name ?? `Graph ${graph}_6a7b8c9d-0e1f-4a2b-8c3d-5e6f7a8b9c0d`,
    resource: definition,
    parameters: { host: server.host, port: server.port, user: 'postgres', graph, ...options.parameters },
  });
  const stores = new Map<string, GraphStore>();
  const store = (graph: string): GraphStore => {
    let opened = stores.get(graph);
    if (opened === undefined) {
      opened = openGraphStore(resource(graph));
      stores.set(graph, opened);
    }
    return opened;
  };
  return {
    name: 'AGE',
    host: server.host,
    port: server.port,
    resource: (graph, options) => {
      store(graph); // so that clear() reaches it
      return resource(graph, options);
    },
    store,
    async clear() {
      for (const opened of stores.values()) await opened.run('MATCH (n) DETACH DELETE n');
    },
    async close() {
      await Promise.allSettled([...stores.values()].map((opened) => opened.close()));
      await server.close();
    },
  };
}

async function startNeo4jBackend(): Promise<GraphBackend> {
  const server = await startNeo4j();
  const definition = definitionOf(RESOURCE_KINDS.NEO4J_DATABASE);
  const parameters = neo4jResourceParameters(server);
  const only = openGraphStore({ resource: definition, parameters });
  return {
    name: 'Neo4j',
    host: parameters.host,
    port: parameters.port,
    resource: (graph, options = {}) => ({
      name: options.name ?? `Graph ${graph}_6a7b8c9d-0e1f-4a2b-8c3d-5e6f7a8b9c0d`,
      resource: definition,
      parameters: { ...parameters, ...options.parameters },
    }),
    store: () => only,
    async clear() {
      await only.run('MATCH (n) DETACH DELETE n');
    },
    async close() {
      await only.close().catch(() => undefined);
      await server.close();
    },
  };
}
