import { age } from '@electric-sql/pglite-age';
import { startEmbeddedPostgres, type EmbeddedPostgres, type EmbeddedPostgresLogger } from '@loom/postgres';

/** Options of startEmbeddedGraph. */
export interface EmbeddedGraphOptions {
  /** Data directory (created with mode 0700); the graph persists across restarts. Only one process may open it. */
  readonly dataDir: string;
  /** Loopback port; default 0, any free port (read it back from `port`). */
  readonly port?: number;
  readonly logger?: EmbeddedPostgresLogger;
}

/**
 * Starts PGlite with Apache AGE (`@electric-sql/pglite-age`) served over the PostgreSQL wire protocol on loopback, for
 * an AGE resource with host 127.0.0.1, the returned port, user postgres and an empty password. PGlite has ONE session
 * shared by every connection, so the search_path the AGE adapter sets applies to all of them: fine for a graph-only
 * instance, but relational tables on the same instance must be schema-qualified.
 */
export function startEmbeddedGraph(options: EmbeddedGraphOptions): Promise<EmbeddedPostgres> {
  return startEmbeddedPostgres({
    dataDir: options.dataDir,
    extensions: { age },
    ...(options.port === undefined ? {} : { port: options.port }),
    ...(options.logger === undefined ? {} : { logger: options.logger }),
  });
}
