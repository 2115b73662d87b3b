import { join, resolve } from 'node:path';
import { type ExecutorConfig } from '../executor-config.js';
import { RESOURCE_KINDS, type ResourceInstance } from '@loom/domain';
import { ListenError } from '@loom/foundation';
import {
  type GraphStore,
  type GraphTransaction,
  lastEmbeddedGraphPort,
  listAgeGraphs,
  type OpenGraphStoreOptions,
  openGraphStore,
  startEmbeddedGraph,
} from '@loom/graph';
import { type Logger } from '@loom/telemetry';
import { SharedGraphStores } from './shared-graph-stores.js';

type EmbeddedGraph = Awaited<ReturnType<typeof startEmbeddedGraph>>;

/** The `host` of an AGE resource that means the executor's own embedded graph. */
export const EMBEDDED_GRAPH_HOST = 'embedded';

/** The host the embedded graph listens on (startEmbeddedGraph's default). */
const EMBEDDED_GRAPH_LOOPBACK = '127.0.0.1';

/** The configuration key of the embedded graph's port. */
const EMBEDDED_GRAPH_PORT_KEY = 'loom.embedded.graph.port';

/** Where the embedded graph listens, or will at its next start (GraphStores.embeddedGraphStatus). */
export interface EmbeddedGraphStatus {
  /** host:port; empty when it never ran on this data directory and no port is configured. */
  readonly address: string;
  readonly running: boolean;
  readonly dataDirectory: string;
  /** Its AGE graphs, when it runs. */
  readonly graphs: readonly string[];
}

/**
 * Opens graph stores for components. An AGE resource whose host is `embedded` is served by the
 * executor's embedded graph (PGlite with Apache AGE on `loom.embedded.graph.dataDir`), started at
 * first use and stopped with the executor, so a fresh machine has a real Cypher graph.
 */
export class GraphStores {
  private embedded: Promise<EmbeddedGraph> | undefined;
  private readonly scratch = new Map<string, { graph: Promise<EmbeddedGraph>; users: number }>();
  /** Stores kept open between reads (ReadGraph), closed with these. */
  readonly shared = new SharedGraphStores((resource) => this.open(resource));

  constructor(
    private readonly config: ExecutorConfig,
    private readonly logger: Logger,
    /** How stores are opened; tests give a recording Neo4j driver here. */
    private readonly options: OpenGraphStoreOptions = {},
  ) {}

  /** A store for the resource; the caller closes it. */
  async open(resource: ResourceInstance): Promise<GraphStore> {
    if (resource.resource.qualifiedName === RESOURCE_KINDS.AGE_DATABASE && resource.parameters.host === EMBEDDED_GRAPH_HOST) {
      const graph = await this.embeddedGraph();
      const parameters = { ...resource.parameters, host: graph.host, port: graph.port, user: 'postgres', password: '', database: 'postgres' };
      return openGraphStore({ ...resource, parameters }, { ...this.options, age: { ...this.options.age, embedded: true } });
    }
    return openGraphStore(resource, this.options);
  }

  /**
   * A store on a scratch graph of one dry run: an embedded PGlite+AGE in `directory` (the run's private directory,
   * removed when the run ends), shared by every component that opens it with the same directory and stopped when the
   * last of them closes its store. Nothing outside the process is touched.
   */
  async openScratch(directory: string): Promise<GraphStore> {
    let entry = this.scratch.get(directory);
    if (entry === undefined) {
      entry = { graph: startEmbeddedGraph({ dataDir: join(directory, 'dry-run-graph'), port: 0, logger: this.logger }), users: 0 };
      this.scratch.set(directory, entry);
    }
    entry.users++;
    const release = async (): Promise<void> => {
      const current = this.scratch.get(directory);
      if (current === undefined || --current.users > 0) return;
      this.scratch.delete(directory);
      await (await current.graph).close();
    };
    let graph: EmbeddedGraph;
    try {
      graph = await entry.graph;
    } catch (error) {
      await release().catch(() => undefined); // the start failed: there is nothing to stop
      throw error;
    }
    const resource = {
      resource: { qualifiedName: RESOURCE_KINDS.AGE_DATABASE },
      parameters: { host: graph.host, port: graph.port, user: 'postgres', password: '', database: 'postgres', graph: 'dry_run' },
    };
    return new ScratchStore(openGraphStore(resource, { ...this.options, age: { ...this.options.age, embedded: true } }), release);
  }

  /**
   * Where the embedded graph listens: its address while it runs (with its AGE graphs), else the address it will take
   * again at its next start (kept in its data directory), or none when it never ran there.
   */
  async embeddedGraphStatus(): Promise<EmbeddedGraphStatus> {
    const dataDirectory = resolve(this.config.embedded.graph.dataDir);
    const running = this.embedded === undefined ? undefined : await this.embedded.catch(() => undefined);
    if (running === undefined) {
      const configured = this.config.embedded.graph.port;
      const port = configured !== 0 ? configured : await lastEmbeddedGraphPort(dataDirectory);
      return { address: port === undefined ? '' : `${EMBEDDED_GRAPH_LOOPBACK}:${port}`, running: false, dataDirectory, graphs: [] };
    }
    const graphs = await listAgeGraphs({ host: running.host, port: running.port, user: 'postgres', password: '', database: 'postgres' }, { embedded: true });
    return { address: `${running.host}:${running.port}`, running: true, dataDirectory: running.dataDir, graphs };
  }

  /** Closes the shared stores and stops the embedded graph, if it was started. */
  async close(): Promise<void> {
    await this.shared.close();
    const embedded = this.embedded;
    this.embedded = undefined;
    if (embedded !== undefined) await (await embedded.catch(() => undefined))?.close();
  }

  private embeddedGraph(): Promise<EmbeddedGraph> {
    const { dataDir, port } = this.config.embedded.graph;
    this.embedded ??= startEmbeddedGraph({
      dataDir,
      port,
      logger: this.logger,
      // the same address at every start of the same data directory, for psql and loom graph query
      rememberPort: { setting: EMBEDDED_GRAPH_PORT_KEY },
    }).then(
      (graph) => {
        this.logger.info({ host: graph.host, port: graph.port, dataDir: graph.dataDir }, 'embedded graph (PGlite with Apache AGE) started');
        return graph;
      },
      (error: unknown) => {
        // a configured port that cannot be bound is told as every listener's is: one line naming the key
        if (port !== 0 && error instanceof Error && error.message.includes(`cannot listen on ${EMBEDDED_GRAPH_LOOPBACK}:${port}`)) {
          throw new ListenError({ host: EMBEDDED_GRAPH_LOOPBACK, port, portSetting: EMBEDDED_GRAPH_PORT_KEY }, error);
        }
        throw error;
      },
    );
    // a failed start is tried again at the next use
    this.embedded.catch(() => (this.embedded = undefined));
    return this.embedded;
  }
}

/** A store that also releases its scratch graph when it is closed (once). */
class ScratchStore implements GraphStore {
  readonly kind: GraphStore['kind'];
  readonly readOnly: boolean;
  private closing: Promise<void> | undefined;

  constructor(
    private readonly store: GraphStore,
    private readonly release: () => Promise<void>,
  ) {
    this.kind = store.kind;
    this.readOnly = store.readOnly;
  }

  run(...args: Parameters<GraphStore['run']>): ReturnType<GraphStore['run']> {
    return this.store.run(...args);
  }

  read(...args: Parameters<GraphStore['read']>): ReturnType<GraphStore['read']> {
    return this.store.read(...args);
  }

  stream(...args: Parameters<GraphStore['stream']>): ReturnType<GraphStore['stream']> {
    return this.store.stream(...args);
  }

  writeTransaction<T>(work: (tx: GraphTransaction) => Promise<T>): Promise<T> {
    return this.store.writeTransaction(work);
  }

  ensurePropertyIndexes(...args: Parameters<GraphStore['ensurePropertyIndexes']>): ReturnType<GraphStore['ensurePropertyIndexes']> {
    return this.store.ensurePropertyIndexes(...args);
  }

  close(): Promise<void> {
    this.closing ??= this.store.close().finally(() => this.release());
    return this.closing;
  }
}
