import { type LoomConfig } from '@loom/config';
import { acquireEmbeddedPostgres, createPool, type Database, type EmbeddedPostgres, migrate, parseDatabaseUrl } from '@loom/postgres';
import { type Logger } from '@loom/telemetry';
import { skillGatewayMigrations } from './migrations.js';

/** The database of the skill registry, migrated, and how to describe and close it. */
export interface SkillStorage {
  readonly db: Database;
  /** host:port/database, never credentials. */
  readonly address: string;
  close(): Promise<void>;
}

/**
 * Opens `loom.skills.database.url`, or with none the process's embedded PostgreSQL (shared with the other services
 * of this process), and runs the migrations. Gateways pointed at one database share one registry.
 */
export async function openSkillStorage(config: Pick<LoomConfig, 'skills' | 'embedded'>, logger: Logger): Promise<SkillStorage> {
  const url = config.skills.database.url;
  const embedded: EmbeddedPostgres | undefined =
    url === undefined ? await acquireEmbeddedPostgres({ dataDir: config.embedded.postgres.dataDir, port: config.embedded.postgres.port, logger }) : undefined;
  const connectionUrl = url ?? (embedded as EmbeddedPostgres).url;
  const db = createPool(connectionUrl, { embedded: embedded !== undefined, applicationName: 'loom-skill-gateway', logger });
  try {
    const { applied } = await migrate(db, 'skill-gateway', skillGatewayMigrations);
    if (applied.length > 0) logger.info({ applied }, 'skill registry schema migrated');
  } catch (error) {
    await db.close();
    await embedded?.close();
    throw error;
  }
  const target = parseDatabaseUrl(connectionUrl);
  return {
    db,
    address: `${target.host}:${target.port}/${target.database}`,
    async close() {
      await db.close();
      await embedded?.close();
    },
  };
}
