import { type DescribeGraphResponse, type ReadGraphRequest, type ReadGraphResponse } from '@loom/contracts';
import {
  FailedPreconditionError,
  findResourceDefinition,
  instanceNamed,
  NotFoundError,
  parseStoredName,
  RESOURCE_KINDS,
  type ResourceInstance,
  ValidationError,
  type WorkflowConfiguration,
} from '@loom/domain';
import { type GraphRecord } from '@loom/graph';
import { EMBEDDED_GRAPH_HOST, type GraphStores } from './components/graph-stores.js';

/** Rows ReadGraph answers when the request sets no max_rows. */
export const READ_GRAPH_DEFAULT_ROWS = 1_000;
/** The most rows one ReadGraph answers. */
export const READ_GRAPH_MAX_ROWS = 10_000;
/** How long a ReadGraph query may run when the request sets no timeout, in ms. */
export const READ_GRAPH_DEFAULT_TIMEOUT_MS = 10_000;
/** The longest time limit a ReadGraph request may set, in ms. */
export const READ_GRAPH_MAX_TIMEOUT_MS = 300_000;

/** What ReadGraph reads through: the executor's graph stores, and a stored workflow's graph resource, opened. */
export interface GraphReadSources {
  readonly stores: GraphStores;
  graphResource(workflow: string, resource: string): Promise<ResourceInstance>;
}

/**
 * Serves ReadGraph and DescribeGraph: read-only Cypher as loom itself on the embedded graph or a stored workflow's graph
 * database resource. The store keeps the query from writing (GraphStore.read); the text is never parsed for it.
 */
export class GraphReads {
  constructor(private readonly sources: GraphReadSources) {}

  async read(request: ReadGraphRequest, signal: AbortSignal): Promise<ReadGraphResponse> {
    if (request.query.trim() === '') throw ValidationError.of('query', 'is required: a Cypher statement', 'MISSING_FIELD');
    const maxRows = maxRowsOf(request.maxRows);
    const timeoutMs = timeoutOf(request.timeout);
    const { instance, store: storeName } = await this.target(request);
    const columns = request.columns.length === 0 ? undefined : request.columns;
    // read_only: an AGE store then neither creates the graph nor installs the extension when they are missing
    const readable = { ...instance, parameters: { ...instance.parameters, read_only: true } };
    const { records, truncated } = await this.sources.stores.shared.use(readable, (store) =>
      store.read(request.query, request.parameters ?? {}, { maxRows, timeoutMs, signal, ...(columns === undefined ? {} : { columns }) }),
    );
    return { columns: columns ?? columnsOf(records), rows: records, truncated, store: storeName };
  }

  async describe(): Promise<DescribeGraphResponse> {
    const status = await this.sources.stores.embeddedGraphStatus();
    return { address: status.address, running: status.running, dataDirectory: status.dataDirectory, graphs: [...status.graphs] };
  }

  /** The resource a request reads and the name of its store for the answer. */
  private async target(request: ReadGraphRequest): Promise<{ instance: ResourceInstance; store: string }> {
    if (request.workflow === '') {
      if (request.resource !== '') throw ValidationError.of('resource', 'names a resource of a workflow: give workflow too', 'MISSING_FIELD');
      if (request.graph === '') {
        throw ValidationError.of(
          'graph',
          "is required: the embedded graph's AGE graph (the graph parameter of a resource with host embedded, e.g. knowledge_graph), or give workflow",
          'MISSING_FIELD',
        );
      }
      const definition = findResourceDefinition(RESOURCE_KINDS.AGE_DATABASE);
      if (definition === undefined) throw new FailedPreconditionError(`the resource catalog has no ${RESOURCE_KINDS.AGE_DATABASE}`);
      const instance = { name: 'embedded graph', resource: definition, parameters: { host: EMBEDDED_GRAPH_HOST, user: 'postgres', graph: request.graph } };
      return { instance, store: 'embedded' };
    }
    if (request.graph !== '') throw ValidationError.of('graph', "must be empty with workflow: the workflow's resource names its graph", 'INVALID_VALUE');
    const instance = await this.sources.graphResource(request.workflow, request.resource);
    const embedded = instance.resource.qualifiedName === RESOURCE_KINDS.AGE_DATABASE && instance.parameters.host === EMBEDDED_GRAPH_HOST;
    return { instance, store: embedded ? 'embedded' : instance.resource.qualifiedName === RESOURCE_KINDS.NEO4J_DATABASE ? 'neo4j' : 'age' };
  }
}

function maxRowsOf(requested: number): number {
  if (requested === 0) return READ_GRAPH_DEFAULT_ROWS;
  if (requested > READ_GRAPH_MAX_ROWS) throw ValidationError.of('max_rows', `is ${requested}; the most is ${READ_GRAPH_MAX_ROWS}`, 'INVALID_VALUE');
  return requested;
}

function timeoutOf(timeout: ReadGraphRequest['timeout']): number {
  if (timeout === undefined) return READ_GRAPH_DEFAULT_TIMEOUT_MS;
  const ms = timeout.seconds * 1000 + Math.floor(timeout.nanos / 1e6);
  if (ms <= 0) throw ValidationError.of('timeout', 'must be positive', 'INVALID_VALUE');
  if (ms > READ_GRAPH_MAX_TIMEOUT_MS) throw ValidationError.of('timeout', `is ${ms} ms; the most is ${READ_GRAPH_MAX_TIMEOUT_MS} ms (5 min)`, 'INVALID_VALUE');
  return ms;
}

function columnsOf(records: readonly GraphRecord[]): string[] {
  return records[0] === undefined ? [] : Object.keys(records[0]);
}

/** The graph database resource kinds ReadGraph reads. */
const GRAPH_RESOURCE_KINDS: ReadonlySet<string> = new Set([RESOURCE_KINDS.AGE_DATABASE, RESOURCE_KINDS.NEO4J_DATABASE]);

/** The graph database resource of a workflow that `name` names (see Executor.graphResource). */
export function graphResourceNamed(workflow: WorkflowConfiguration, name: string): ResourceInstance {
  const graphs = new Map<string, ResourceInstance>();
  for (const instance of [...workflow.resources, ...workflow.components.flatMap((component) => (component.resource == null ? [] : [component.resource]))]) {
    if (GRAPH_RESOURCE_KINDS.has(instance.resource.qualifiedName) && !graphs.has(instance.name)) graphs.set(instance.name, instance);
  }
  const plain = (instance: string): string => parseStoredName(instance)?.base ?? instance;
  if (name === '') {
    const [only, ...others] = graphs.values();
    if (only !== undefined && others.length === 0) return only;
    throw ValidationError.of(
      'resource',
      only === undefined
        ? `workflow '${workflow.name}' has no graph database resource (Neo4j or PostgreSQL with AGE)`
        : `workflow '${workflow.name}' has ${graphs.size} graph database resources (${[...graphs.keys()].map(plain).join(', ')}): name one`,
      only === undefined ? 'NOT_A_GRAPH' : 'AMBIGUOUS_NAME',
    );
  }
  const found = instanceNamed(name, graphs.keys());
  if (found !== undefined) return graphs.get(found)!;
  const other = [...workflow.resources].find((instance) => instanceNamed(name, [instance.name]) !== undefined);
  if (other !== undefined) {
    throw ValidationError.of('resource', `'${name}' of workflow '${workflow.name}' is a ${other.resource.qualifiedName}, not a graph database`, 'NOT_A_GRAPH');
  }
  throw new NotFoundError(`graph database resource of workflow '${workflow.name}'`, name);
}
