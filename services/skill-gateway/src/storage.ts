import { type LoomConfig } from '@loom/config';
import { type Database, openDatabase } from '@loom/postgres';
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
  const opened = await openDatabase({
    url: config.skills.database.url,
    embedded: config.embedded.postgres,
    component: 'skill-gateway',
    schemaName: 'skill registry',
    migrations: skillGatewayMigrations,
    applicationName: 'loom-skill-gateway',
    logger,
  });
  return { db: opened.db, address: opened.target.address, close: () => opened.close() };
}
