export {
  startEmbeddedPostgres,
  makeTemplateDataDir,
  isLoopbackHost,
  EMBEDDED_MAX_CONNECTIONS,
  PORT_FILE_NAME,
  rememberedPort,
  type EmbeddedPostgres,
  type EmbeddedPostgresOptions,
  type EmbeddedPostgresLogger,
} from './embedded-postgres.js';
export { startEmbeddedPostgresInWorker, type EmbeddedWorkerOptions } from './embedded-in-worker.js';
export { acquireEmbeddedPostgres } from './shared-embedded.js';
export { type EmbeddedConnectionCounts } from './in-memory-connection.js';
export { builtTemplateDir, TEMPLATE_STAMP_FILE, templateRecipe } from './built-template.js';
export { createPool, type Database, NETWORK_ERROR_CODES, type PoolOptions } from './database.js';
export { migrate, MIGRATIONS_TABLE, type Migration, type MigrationResult } from './migrate.js';
export { openDatabase, type OpenDatabaseOptions, type OpenedDatabase } from './open-database.js';
export { parseDatabaseUrl, redactPassword, type DatabaseTarget } from './connection-url.js';
export { LOCK_FILE_NAME } from './data-dir-lock.js';
export {
  DatabaseUnavailableError,
  NonLoopbackHostError,
  DataDirectoryInUseError,
  EmbeddedPostgresStartError,
  InvalidMigrationsError,
  MigrationHistoryError,
  MigrationFailedError,
  DatabaseOpenError,
} from './errors.js';
