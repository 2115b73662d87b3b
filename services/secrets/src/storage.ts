import { type LoomConfig } from '@loom/config';
import { type Database, type EmbeddedPostgres, openDatabase } from '@loom/postgres';
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
  const opened = await openDatabase({
    url: config.secrets.database.url,
    embedded: config.embedded.postgres,
    component: 'secrets',
    migrations: secretsMigrations,
    applicationName: 'loom-secrets',
    logger,
  });
  const { db, embedded, target } = opened;
  const storage: SecretsStorage = { db, embedded, address: `${target.host}:${target.port}`, database: target.database, close: () => opened.close() };
  if (embedded !== undefined) {
    logger.info(
      { address: storage.address, dataDir: embedded.dataDir, psql: `psql -h ${embedded.host} -p ${embedded.port} -U postgres` },
      'embedded PostgreSQL for ecosystem variables (loopback only)',
    );
  }
  return storage;
}
