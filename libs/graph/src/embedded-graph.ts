import { type EmbeddedPostgres, type EmbeddedPostgresLogger, rememberedPort, startEmbeddedPostgresInWorker } from '@loom/postgres';

// the worker runs the built module (dist), from src under the tests as from dist in a deployment
const WORKER_ENTRY = new URL('../dist/embedded-graph-worker.js', import.meta.url);

/** Options of startEmbeddedGraph. */
export interface EmbeddedGraphOptions {
  /** Data directory (created with mode 0700); the graph persists across restarts. Only one process may open it. */
  readonly dataDir: string;
  /** Loopback port; default 0, any free port (read it back from `port`). */
  readonly port?: number;
  readonly logger?: EmbeddedPostgresLogger;
  /** Listen on the port of the last start again (EmbeddedPostgresOptions.rememberPort), so the address stays the same. */
  readonly rememberPort?: { readonly setting: string };
}

/**
 * Starts PGlite with Apache AGE (`@electric-sql/pglite-age`) served over the PostgreSQL wire protocol on loopback, for
 * an AGE resource with host 127.0.0.1, the returned port, user postgres and an empty password. PGlite runs in a worker
 * thread of its own (startEmbeddedPostgresInWorker): a graph statement runs synchronously in WebAssembly for as long as
 * it takes, which on the main thread held up every gRPC call, skill call and timer of the process meanwhile. PGlite has
 * ONE session shared by every connection, so the search_path the AGE adapter sets applies to all of them: fine for a
 * graph-only instance, but relational tables on the same instance must be schema-qualified.
 */
export function startEmbeddedGraph(options: EmbeddedGraphOptions): Promise<EmbeddedPostgres> {
  return startEmbeddedPostgresInWorker({
    entry: WORKER_ENTRY,
    dataDir: options.dataDir,
    ...(options.port === undefined ? {} : { port: options.port }),
    ...(options.logger === undefined ? {} : { logger: options.logger }),
    ...(options.rememberPort === undefined ? {} : { rememberPort: options.rememberPort }),
  });
}

/** The port the embedded graph of a data directory listened on at its last start (kept with rememberPort), if any. */
export function lastEmbeddedGraphPort(dataDir: string): Promise<number | undefined> {
  return rememberedPort(dataDir);
}
