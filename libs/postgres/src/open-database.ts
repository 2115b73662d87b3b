import { LoomError, ValidationError } from '@loom/domain';
import { ListenError } from '@loom/foundation';
import { type DatabaseTarget, parseDatabaseUrl, redactPassword } from './connection-url.js';
import { createPool, type Database, type PoolOptions } from './database.js';
import { type EmbeddedPostgres, type EmbeddedPostgresLogger, type EmbeddedPostgresOptions } from './embedded-postgres.js';
import { DatabaseOpenError, EmbeddedPostgresStartError } from './errors.js';
import { migrate, type Migration } from './migrate.js';
import { acquireEmbeddedPostgres } from './shared-embedded.js';

/** Options of openDatabase; the pool options (applicationName, max, statementTimeoutMs) go to createPool. */
export interface OpenDatabaseOptions extends Omit<PoolOptions, 'embedded' | 'logger'> {
  /** The PostgreSQL to open; without it, the embedded one of `embedded`. */
  readonly url?: string | undefined;
  /** The process's shared embedded PostgreSQL (acquireEmbeddedPostgres), used when there is no `url`. */
  readonly embedded?: Omit<EmbeddedPostgresOptions, 'logger'>;
  /** The setting that chose the embedded server's port (`loom.embedded.postgres.port`), named when it cannot be bound. */
  readonly embeddedPortSetting?: string;
  /** Component whose migrations these are (their key in public.loom_schema_migrations). */
  readonly component: string;
  readonly migrations: readonly Migration[];
  /** What the schema is called in the log line of a migration; default the component. */
  readonly schemaName?: string;
  readonly logger: EmbeddedPostgresLogger;
}

/** A migrated database and the embedded server under it, if any. */
export interface OpenedDatabase {
  readonly db: Database;
  /** The embedded server the pool talks to; undefined on a URL. */
  readonly embedded: EmbeddedPostgres | undefined;
  /** Where the pool connects; its address never holds credentials. */
  readonly target: DatabaseTarget;
  /** Closes the pool, then releases the embedded server; a second call waits for the first. */
  close(): Promise<void>;
}

/**
 * Opens `url`, or with none the embedded PostgreSQL, and runs the migrations. When a step fails, what the earlier
 * steps opened is closed again and the step's error is thrown: the errors that name the failure
 * (EmbeddedPostgresStartError, DatabaseUnavailableError for connecting, MigrationFailedError…) as they are,
 * anything else as DatabaseOpenError.
 */
export async function openDatabase(options: OpenDatabaseOptions): Promise<OpenedDatabase> {
  const { url, embedded: embeddedOptions, embeddedPortSetting, component, migrations, schemaName = component, logger, ...poolOptions } = options;
  let embedded: EmbeddedPostgres | undefined;
  let connectionUrl: string;
  if (url !== undefined) {
    connectionUrl = url;
  } else if (embeddedOptions !== undefined) {
    embedded = await acquireEmbeddedPostgres({ ...embeddedOptions, logger }).catch((error: unknown) => {
      throw asListenError(error, embeddedOptions, embeddedPortSetting);
    });
    connectionUrl = embedded.url;
  } else {
    throw ValidationError.of('url', `the database of '${component}' needs a URL or an embedded data directory`);
  }

  let db: Database | undefined;
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      try {
        await db?.close();
      } finally {
        await embedded?.close();
      }
    })();
    return closing;
  };

  let target: DatabaseTarget | undefined;
  try {
    target = parseDatabaseUrl(connectionUrl);
    db = createPool(connectionUrl, { ...poolOptions, embedded: embedded !== undefined, logger });
    const { applied } = await migrate(db, component, migrations);
    if (applied.length > 0) logger.info({ applied }, `${schemaName} schema migrated`);
    return { db, embedded, target, close };
  } catch (error) {
    try {
      await close();
    } catch (closeError) {
      // the failure to open is what the caller must see; this one is only worth a line
      logger.warn({ err: closeError, component }, 'database not closed after it failed to open');
    }
    if (error instanceof LoomError || target === undefined) throw error;
    const reason = redactPassword(error instanceof Error ? error.message : String(error), target.password);
    throw new DatabaseOpenError(component, target.address, reason, { cause: error });
  }
}

/** The embedded server's failure to listen as the ListenError naming `portSetting`; any other error as it is. */
function asListenError(error: unknown, embedded: Omit<EmbeddedPostgresOptions, 'logger'>, portSetting: string | undefined): unknown {
  const cause = error instanceof EmbeddedPostgresStartError ? (error.cause as NodeJS.ErrnoException | undefined) : undefined;
  if (portSetting === undefined || cause?.syscall !== 'listen') return error;
  return new ListenError({ host: embedded.host ?? '127.0.0.1', port: embedded.port ?? 0, portSetting }, cause);
}
