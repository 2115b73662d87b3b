import { setTimeout as sleep } from 'node:timers/promises';
import { ExecutorClient, type PublishResult, WorkflowState, WorkflowStoreClient } from '@loom/contracts';
import { COMPONENT_KINDS, type ComponentInstance, componentInstance, findResourceDefinition, RESOURCE_KINDS, type WorkflowConfiguration } from '@loom/domain';
import { workflowToProto } from '@loom/domain/proto';
import { type GraphStore, openGraphStore } from '@loom/graph';
import pg from 'pg';
import { call, createClient, isServiceError } from '@loom/service-kit';
import { status } from '@grpc/grpc-js';
import { expect } from 'vitest';
import { type LoomProcess, startLoomProcess } from './loom-process.js';
import { uuid } from './scheduled-workflows.js';
import { EXECUTOR_STACK_ARGUMENTS } from '@loom/testing';

/**
 * The parts of the durable-message tests (durable-messages.test.ts): a `loom serve` on NATS JetStream with its own data
 * directory, workflows that end in a graph writer on the embedded graph, a publisher that keeps what was acknowledged,
 * and the graph read back.
 */

/** The inlet of every workflow here. */
export const INLET = 'in';
/** The graph writer of every workflow here. */
export const WRITER = 'write';
/** The node label the writer MERGEs, one node per message id. */
export const LABEL = 'Msg';
/**
 * One node per message id; `deliveries` counts how often the writer saw the message: a redelivered message (after a
 * crash) increments it again and changes nothing else, so the graph stays what a run without the crash makes.
 */
export const MERGE_QUERY = `MERGE (m:${LABEL} {id: $id}) SET m.name = $name, m.deliveries = coalesce(m.deliveries, 0) + 1`;

/** Starts `loom serve` on the NATS server at `natsUrl`, its state in `dataDirectory` (the same one again after a crash). */
export function startDurableLoom(dataDirectory: string, natsUrl: string, settings: readonly string[] = []): Promise<LoomProcess> {
  return startLoomProcess([
    ...EXECUTOR_STACK_ARGUMENTS,
    '--set',
    `loom.data.directory=${dataDirectory}`,
    '--set',
    `loom.messaging.nats.servers=${natsUrl}`,
    ...settings.flatMap((setting) => ['--set', setting]),
  ]);
}

/** The AGE resource of the executor's embedded graph, graph `graph`. */
function embeddedGraph(graph: string): NonNullable<ComponentInstance['resource']> {
  const definition = findResourceDefinition(RESOURCE_KINDS.AGE_DATABASE);
  if (definition === undefined) throw new Error('the catalog has no AGE resource kind');
  return { name: `Embedded graph_${uuid(700)}`, resource: definition, parameters: { host: 'embedded', user: 'postgres', graph } };
}

/** A graph resource of a workflow's writer: the embedded graph's, or another (a Neo4j server every executor reaches). */
export type GraphResource = NonNullable<ComponentInstance['resource']>;

/** The graph writer MERGEing one node per message into `resource`, in batches (as a bulk import writes). */
function graphWriter(resource: GraphResource): ComponentInstance {
  const writer = componentInstance(COMPONENT_KINDS.GRAPH_DATABASE_WRITER, WRITER, {
    query: MERGE_QUERY,
    batch_writes: true,
    batch_size: 250,
    aggregation_timeout: 20,
    // the embedded graph restarts with the executor: a write in its first moments may find it busy
    max_retry: 3,
    delay: 200,
  });
  return { ...writer, resource };
}

/**
 * Workflow `name_<uuid>`: inlet → `middle` (each linked to the next) → graph writer on `graph` of the executor's
 * embedded graph, or on `resource` when given.
 */
export function graphWorkflow(
  name: string,
  index: number,
  graph: string,
  middle: readonly ComponentInstance[] = [],
  resource: GraphResource = embeddedGraph(graph),
): WorkflowConfiguration {
  const chain = [componentInstance(COMPONENT_KINDS.INLET, INLET), ...middle, graphWriter(resource)];
  return {
    name: `${name}_${uuid(index)}`,
    autoStart: false,
    components: chain,
    links: chain.slice(1).map((component, position) => ({ from: chain[position]!.name, to: component.name })),
    resources: [],
    skills: [],
    workflowResources: [],
  };
}

/** The body of message `id` (what the graph holds of it). */
export const bodyOf = (id: string): Record<string, unknown> => ({ id, name: `message ${id}` });

/**
 * Starts `workflow` unless its run already runs, and answers once it runs. A restarted executor resumes on its own
 * every workflow the cluster runs (issue 35): a start that finds it starting there already waits for it to run.
 */
export async function ensureRunning(executor: ExecutorClient, workflow: string): Promise<void> {
  const state = async (): Promise<WorkflowState | undefined> => (await call(executor, 'getWorkflowStatus', { name: workflow }).catch(() => undefined))?.state;
  if ((await state()) === WorkflowState.WORKFLOW_STATE_RUNNING) return;
  try {
    const started = await call(executor, 'startWorkflow', { name: workflow });
    if (started.state !== WorkflowState.WORKFLOW_STATE_RUNNING) throw new Error(`${workflow} did not start: state ${started.state}`);
  } catch (error) {
    if (!isServiceError(error) || error.code !== status.FAILED_PRECONDITION) throw error;
    await expect.poll(state, { timeout: 60_000 }).toBe(WorkflowState.WORKFLOW_STATE_RUNNING);
  }
}

/** gRPC clients of the workflow store at `storeAt` (the executor's own process by default) and of `executor`; close() closes both. */
export function clientsOf(executor: LoomProcess, storeAt: LoomProcess = executor): { store: WorkflowStoreClient; executor: ExecutorClient; close(): void } {
  const store = createClient(WorkflowStoreClient, storeAt.address, { retry: false, deadlineMs: 60_000 });
  const executorClient = createClient(ExecutorClient, executor.address, { retry: false, deadlineMs: 60_000 });
  return {
    store,
    executor: executorClient,
    close: () => {
      store.close();
      executorClient.close();
    },
  };
}

/** Pushes `workflow` to the workflow store. */
export async function pushWorkflow(store: WorkflowStoreClient, workflow: WorkflowConfiguration): Promise<void> {
  await call(store, 'putWorkflow', { workflow: workflowToProto(workflow) });
}

/** Pushes and starts `workflow`. */
export async function pushAndStart(clients: ReturnType<typeof clientsOf>, workflow: WorkflowConfiguration): Promise<void> {
  await pushWorkflow(clients.store, workflow);
  await ensureRunning(clients.executor, workflow.name);
}

/** What a publisher got back: the ids JetStream stored (accepted or answered duplicate), the rest, and the answers. */
export interface Published {
  readonly acknowledged: Set<string>;
  readonly unacknowledged: string[];
  readonly duplicates: number;
}

/** How publishIds sends. */
export interface PublishSettings {
  /** Calls at once; default 4. */
  readonly callers?: number;
  /** Messages a PublishMessages call; default 100. */
  readonly batch?: number;
  /** Told each acknowledged batch (the count so far), e.g. to kill the executor mid-run. */
  readonly onAcknowledged?: (count: number) => void;
  /**
   * How a failed call is handled: `stop` (the executor is gone: the batch and every later one stay unacknowledged) or
   * `retry` (the same ids again, as a client does, until acknowledged; NATS restarting).
   */
  readonly onFailure: 'stop' | 'retry';
}

const isStored = (result: PublishResult): boolean => result.accepted || result.duplicate;
/** Statuses of a refused message a client sends again: UNAVAILABLE (NATS away) and RESOURCE_EXHAUSTED (stream full). */
const RETRYABLE = new Set([14, 8]);
/** Sends of one batch before a retrying publisher gives up (a minute of NATS away at 250 ms). */
const MAX_ATTEMPTS = 240;

/** Publishes `ids` (bodyOf) with PublishMessages in batches, each message with its id. */
export async function publishIds(executor: ExecutorClient, workflow: string, ids: readonly string[], settings: PublishSettings): Promise<Published> {
  const batch = settings.batch ?? 100;
  const acknowledged = new Set<string>();
  const unacknowledged: string[] = [];
  let duplicates = 0;
  let next = 0;
  let stopped = false;
  const send = async (chunk: readonly string[]): Promise<readonly PublishResult[]> => {
    const messages = chunk.map((id) => ({ body: bodyOf(id), headers: {}, messageId: id }));
    return (await call(executor, 'publishMessages', { workflowName: workflow, inlet: INLET, messages })).results;
  };
  /** Sends `chunk` until each id is stored; answers false when the publisher stops (onFailure 'stop'). */
  const deliver = async (chunk: readonly string[]): Promise<boolean> => {
    let pending = chunk;
    for (let attempt = 0; pending.length > 0; attempt++) {
      let results: readonly PublishResult[];
      try {
        results = await send(pending);
      } catch (error) {
        if (settings.onFailure === 'retry' && attempt < MAX_ATTEMPTS) {
          await sleep(250); // back off while the server is away; what is asserted is the outcome, not this pace
          continue;
        }
        if (settings.onFailure === 'retry') throw error;
        unacknowledged.push(...pending);
        return false;
      }
      for (const result of results.filter(isStored)) acknowledged.add(result.messageId);
      duplicates += results.filter((result) => result.duplicate).length;
      const refused = results.filter((result) => !isStored(result));
      const final = refused.find((result) => !RETRYABLE.has(result.error?.code ?? 0));
      if (final !== undefined) throw new Error(`a message was refused: ${JSON.stringify(final.error)}`);
      pending = refused.map((result) => result.messageId);
      if (pending.length > 0 && (settings.onFailure === 'stop' || attempt >= MAX_ATTEMPTS)) {
        unacknowledged.push(...pending);
        return false;
      }
      // refused for now (NATS away): the same ids again, as a client retries a retryable status
      if (pending.length > 0) await sleep(250);
    }
    settings.onAcknowledged?.(acknowledged.size);
    return true;
  };
  const loop = async (): Promise<void> => {
    while (next < ids.length && !stopped) {
      const chunk = ids.slice(next, next + batch);
      next += batch;
      if (!(await deliver(chunk))) stopped = true;
    }
  };
  await Promise.all(Array.from({ length: settings.callers ?? 4 }, loop));
  unacknowledged.push(...ids.slice(next));
  return { acknowledged, unacknowledged, duplicates };
}

/** A node of the graph: its id, its name and how often the writer MERGEd it. */
export interface MessageNode {
  readonly id: string;
  readonly name: string;
  readonly deliveries: number;
}

/**
 * A store on the embedded graph of `loom` (the port its log gives once the graph started, which a workflow's start
 * does), with the node label indexed for the writer's MERGE.
 */
export async function embeddedGraphStore(loom: LoomProcess, graph: string): Promise<GraphStore> {
  let port: number | undefined;
  for (let waited = 0; port === undefined; waited++) {
    port = loom.logLines.map((line) => JSON.parse(line) as { msg?: string; port?: number }).find((entry) => entry.msg?.startsWith('embedded graph'))?.port;
    if (port !== undefined) break;
    if (waited > 600) throw new Error('loom logged no embedded graph start');
    await sleep(100);
  }
  const definition = findResourceDefinition(RESOURCE_KINDS.AGE_DATABASE)!;
  const store = openGraphStore({ resource: definition, parameters: { host: '127.0.0.1', port, user: 'postgres', graph } });
  // makes the label's table (and a btree for WHERE lookups); AGE's MERGE matches by containment (`properties @> {id: …}`),
  // which only a GIN index serves: without it each MERGE scans every node, and 10,000 take minutes
  await store.ensurePropertyIndexes([{ label: LABEL, property: 'id' }]);
  const client = new pg.Client({ host: '127.0.0.1', port, user: 'postgres' });
  await client.connect();
  try {
    await client.query(`CREATE INDEX IF NOT EXISTS "${LABEL}_properties_gin" ON "${graph}"."${LABEL}" USING gin (properties)`);
  } finally {
    await client.end();
  }
  return store;
}

/** Every message node of the graph, ordered by id. */
export async function messageNodes(store: GraphStore): Promise<MessageNode[]> {
  const records = await store.run(`MATCH (m:${LABEL}) RETURN m.id AS id, m.name AS name, m.deliveries AS deliveries ORDER BY m.id`);
  return records.map((record) => ({ id: record.id as string, name: record.name as string, deliveries: Number(record.deliveries) }));
}

/** How many message nodes the graph holds. */
export async function messageCount(store: GraphStore): Promise<number> {
  const [record] = await store.run(`MATCH (m:${LABEL}) RETURN count(m) AS total`);
  return Number(record?.total ?? 0);
}

/** `count` message ids with `prefix`, in order. */
export function messageIds(prefix: string, count: number): string[] {
  return Array.from({ length: count }, (_, index) => `${prefix}-${String(index).padStart(5, '0')}`);
}

/** The graph a run without any crash makes of `ids`: one node each, seen once. */
export function cleanGraphOf(ids: readonly string[]): Omit<MessageNode, 'deliveries'>[] {
  return [...ids].sort().map((id) => ({ id, name: String(bodyOf(id).name) }));
}
