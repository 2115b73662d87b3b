import { ExecutorClient } from '@loom/contracts';
import { findResourceDefinition, RESOURCE_KINDS } from '@loom/domain';
import { type GraphStore, openGraphStore } from '@loom/graph';
import { call, createClient } from '@loom/service-kit';
import { CLUSTER_CONTROL_ARGUMENTS, clusterExecutorArguments, neo4jResourceParameters, type Neo4jTestServer } from '@loom/testing';
import { type GraphResource, LABEL, WRITER } from './durable-workflows.js';
import { type LoomProcess, startLoom, stopLoom } from './loom-process.js';
import { uuid } from './scheduled-workflows.js';

/**
 * Several executors sharing workflows, as processes of the built `loom` binary (issue 35): one process serving what the
 * executors call (secrets, config store, audit), as one deployment's other services do, and executor processes
 * (`--services executor`) on one NATS server, each with a data directory of its own. Their arguments are @loom/testing's,
 * which bench/cluster.bench.mjs starts its executors with too.
 */

/** One control process and the executors on one NATS server. */
export interface ExecutorCluster {
  /** The process of the secrets, config store and audit services: push workflows here. */
  readonly control: LoomProcess;
  /** The executor processes, in start order (a killed one stays in the list). */
  readonly executors: LoomProcess[];
  /** Starts one more executor in the cluster. */
  addExecutor(): Promise<LoomProcess>;
  /** Stops every process still running. */
  close(): Promise<void>;
}

/** Starts the control process and `count` executors on the NATS server at `natsUrl`, each with `settings` (`key=value`). */
export async function startExecutorCluster(natsUrl: string, count: number, settings: readonly string[] = []): Promise<ExecutorCluster> {
  const control = await startLoom(CLUSTER_CONTROL_ARGUMENTS);
  const executors: LoomProcess[] = [];
  const addExecutor = async (): Promise<LoomProcess> => {
    const executor = await startLoom([...clusterExecutorArguments(control.address, natsUrl), ...settings.flatMap((setting) => ['--set', setting])]);
    executors.push(executor);
    return executor;
  };
  try {
    // one after the other: each start loads the binary's modules, and two cores are shared
    for (let index = 0; index < count; index++) await addExecutor();
  } catch (error) {
    for (const loom of [...executors, control]) await stopLoom(loom);
    throw error;
  }
  return {
    control,
    executors,
    addExecutor,
    close: async () => {
      await Promise.all(executors.map((executor) => stopLoom(executor)));
      await stopLoom(control);
    },
  };
}

/** How many messages the graph writer of `workflow` wrote on `executor` (its own status counters). */
export async function writtenBy(executor: LoomProcess, workflow: string): Promise<number> {
  const client = createClient(ExecutorClient, executor.address, { retry: false, deadlineMs: 30_000 });
  try {
    const status = await call(client, 'getWorkflowStatus', { name: workflow });
    return Number(status.components.find((component) => component.name === WRITER)?.messagesOut ?? 0);
  } finally {
    client.close();
  }
}

/** A Neo4j resource on `server` for a workflow's graph writer. */
export function neo4jGraph(server: Neo4jTestServer): GraphResource {
  const definition = findResourceDefinition(RESOURCE_KINDS.NEO4J_DATABASE);
  if (definition === undefined) throw new Error('the catalog has no Neo4j resource kind');
  return { name: `Shared graph_${uuid(710)}`, resource: definition, parameters: neo4jResourceParameters(server) };
}

/**
 * A store on the Neo4j server, the message label unique by id: MERGEs of one id from two executors (a message
 * redelivered while its first delivery is still being written) then make one node, as on a single executor.
 */
export async function neo4jGraphStore(server: Neo4jTestServer): Promise<GraphStore> {
  const { resource, parameters } = neo4jGraph(server);
  const store = openGraphStore({ resource, parameters });
  await store.run(`CREATE CONSTRAINT ${LABEL}_id IF NOT EXISTS FOR (m:${LABEL}) REQUIRE m.id IS UNIQUE`);
  return store;
}
