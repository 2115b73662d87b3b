import { type LoomConfig } from '@loom/config';
import { RESOURCE_KINDS, type ResourceInstance } from '@loom/domain';
import { type GraphStore, type OpenGraphStoreOptions, openGraphStore, startEmbeddedGraph } from '@loom/graph';
import { type Logger } from '@loom/telemetry';

type EmbeddedGraph = Awaited<ReturnType<typeof startEmbeddedGraph>>;

/** The `host` of an AGE resource that means the executor's own embedded graph. */
export const EMBEDDED_GRAPH_HOST = 'embedded';

/**
 * Opens graph stores for components. An AGE resource whose host is `embedded` is served by the
 * executor's embedded graph (PGlite with Apache AGE on `loom.embedded.graph.dataDir`), started at
 * first use and stopped with the executor, so a fresh machine has a real Cypher graph.
 */
export class GraphStores {
  private embedded: Promise<EmbeddedGraph> | undefined;

  constructor(
    private readonly config: LoomConfig,
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

  /** Stops the embedded graph, if it was started. */
  async close(): Promise<void> {
    const embedded = this.embedded;
    this.embedded = undefined;
    if (embedded !== undefined) await (await embedded.catch(() => undefined))?.close();
  }

  private embeddedGraph(): Promise<EmbeddedGraph> {
    this.embedded ??= startEmbeddedGraph({ dataDir: this.config.embedded.graph.dataDir, port: this.config.embedded.graph.port, logger: this.logger }).then((graph) => {
      this.logger.info({ host: graph.host, port: graph.port, dataDir: graph.dataDir }, 'embedded graph (PGlite with Apache AGE) started');
      return graph;
    });
    // a failed start is tried again at the next use
    this.embedded.catch(() => (this.embedded = undefined));
    return this.embedded;
  }
}
