import { ExecutorClient, type GetWorkflowStatusResponse, type WorkflowState } from '@loom/contracts';
import { findResourceDefinition, RESOURCE_KINDS } from '@loom/domain';
import { type GraphStore, openGraphStore } from '@loom/graph';
import { call, createClient } from '@loom/service-kit';
import { CLUSTER_CONTROL_ARGUMENTS, clusterExecutorArguments, neo4jResourceParameters, type Neo4jTestServer } from '@loom/testing';
import { type GraphResource, LABEL, WRITER } from './durable-workflows.js';
import { type LoomProcess, startLoomProcess, stopLoom } from './loom-process.js';
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
  const control = await startLoomProcess(CLUSTER_CONTROL_ARGUMENTS);
  const executors: LoomProcess[] = [];
  const addExecutor = async (): Promise<LoomProcess> => {
    const executor = await startLoomProcess([
      ...clusterExecutorArguments(control.address, natsUrl),
      ...[`loom.executor.id=${executorId(executors.length)}`, ...settings].flatMap((setting) => ['--set', setting]),
    ]);
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

/** The loom.executor.id of the cluster's executor at `index` (start order): `executor-1`, `executor-2`… */
export const executorId = (index: number): string => `executor-${index + 1}`;

/** The loom.executor.id of one of the cluster's executors. */
export function idOf(cluster: ExecutorCluster, executor: LoomProcess): string {
  return executorId(cluster.executors.indexOf(executor));
}

/** The cluster's executors that were not killed or stopped. */
export function liveExecutors(cluster: ExecutorCluster): LoomProcess[] {
  return cluster.executors.filter((executor) => executor.child.exitCode === null && executor.child.signalCode === null);
}

/** Starts executors until `count` of the cluster's live; answers the live ones. */
export async function ensureLive(cluster: ExecutorCluster, count: number): Promise<LoomProcess[]> {
  while (liveExecutors(cluster).length < count) await cluster.addExecutor();
  return liveExecutors(cluster);
}

/** GetWorkflowStatus of `workflow` asked of `executor`. */
export async function statusOn(executor: LoomProcess, workflow: string): Promise<GetWorkflowStatusResponse> {
  const client = createClient(ExecutorClient, executor.address, { retry: false, deadlineMs: 30_000 });
  try {
    return await call(client, 'getWorkflowStatus', { name: workflow });
  } finally {
    client.close();
  }
}

/** Each executor's state of `workflow` as `executor` sees it (the parts of its status): `{ 'executor-1': RUNNING, … }`. */
export async function partStates(executor: LoomProcess, workflow: string): Promise<Record<string, WorkflowState>> {
  const status = await statusOn(executor, workflow).catch(() => undefined);
  return Object.fromEntries((status?.executors ?? []).map((part) => [part.executorId, part.state]));
}

/** How many messages the graph writer of `workflow` wrote on `executor`: its own part of the status, as it last reported it. */
export async function writtenBy(executor: LoomProcess, workflow: string): Promise<number> {
  const status = await statusOn(executor, workflow);
  const own = status.executors.find((part) => part.executorId === status.executorId);
  return Number(own?.components.find((component) => component.name === WRITER)?.messagesOut ?? 0);
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
