import { type LoomConfig } from '@loom/config';
import { acquireEmbeddedPostgres, createPool, type Database, type EmbeddedPostgres, migrate, parseDatabaseUrl } from '@loom/postgres';
import { type Logger } from '@loom/telemetry';
import { secretsMigrations } from './migrations.js';

/** The database of the secrets service, migrated, and how to describe and close it. */
export interface SecretsStorage {
  readonly db: Database;
  readonly embedded: EmbeddedPostgres | undefined;
  /** host:port and database name, never credentials. */
  readonly address: string;
  readonly database: string;
  close(): Promise<void>;
}

/** Opens `loom.secrets.database.url`, or with none the embedded PostgreSQL, and runs the migrations. */
export async function openSecretsStorage(config: Pick<LoomConfig, 'secrets' | 'embedded'>, logger: Logger): Promise<SecretsStorage> {
  const url = config.secrets.database.url;
  const embedded =
    url === undefined ? await acquireEmbeddedPostgres({ dataDir: config.embedded.postgres.dataDir, port: config.embedded.postgres.port, logger }) : undefined;
  const connectionUrl = url ?? (embedded as EmbeddedPostgres).url;
  const db = createPool(connectionUrl, { embedded: embedded !== undefined, applicationName: 'loom-secrets' });
  try {
    const { applied } = await migrate(db, 'secrets', secretsMigrations);
    if (applied.length > 0) logger.info({ applied }, 'secrets schema migrated');
  } catch (error) {
    await db.close();
    await embedded?.close();
    throw error;
  }
  const target = parseDatabaseUrl(connectionUrl);
  const storage: SecretsStorage = {
    db,
    embedded,
    address: `${target.host}:${target.port}`,
    database: target.database,
    async close() {
      await db.close();
      await embedded?.close();
    },
  };
  if (embedded !== undefined) {
    logger.info(
      { address: storage.address, dataDir: embedded.dataDir, psql: `psql -h ${embedded.host} -p ${embedded.port} -U postgres` },
      'embedded PostgreSQL for ecosystem variables (loopback only)',
    );
  }
  return storage;
}
