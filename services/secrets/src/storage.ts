import { type LoomConfig } from '@loom/config';
import { type OpenedDatabase, openDatabase } from '@loom/postgres';
import { type Logger } from '@loom/telemetry';
import { secretsMigrations } from './migrations.js';

/** Opens `loom.secrets.database.url`, or with none the embedded PostgreSQL, and runs the migrations. */
export async function openSecretsStorage(config: Pick<LoomConfig, 'secrets' | 'embedded'>, logger: Logger): Promise<OpenedDatabase> {
  const opened = await openDatabase({
    url: config.secrets.database.url,
    embedded: config.embedded.postgres,
    embeddedPortSetting: 'loom.embedded.postgres.port',
    component: 'secrets',
    migrations: secretsMigrations,
    applicationName: 'loom-secrets',
    logger,
  });
  const { embedded, target } = opened;
  if (embedded !== undefined) {
    logger.info(
      { address: `${target.host}:${target.port}`, dataDir: embedded.dataDir, psql: `psql -h ${embedded.host} -p ${embedded.port} -U postgres` },
      'embedded PostgreSQL for ecosystem variables (loopback only)',
    );
  }
  return opened;
}
