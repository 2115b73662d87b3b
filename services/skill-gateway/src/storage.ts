import { type LoomConfig } from '@loom/config';
import { type OpenedDatabase, openDatabase } from '@loom/postgres';
import { type Logger } from '@loom/telemetry';
import { skillGatewayMigrations } from './migrations.js';

/**
 * Opens `loom.skills.database.url`, or with none the process's embedded PostgreSQL (shared with the other services
 * of this process), and runs the migrations. Gateways pointed at one database share one registry.
 */
export function openSkillStorage(config: Pick<LoomConfig, 'skills' | 'embedded'>, logger: Logger): Promise<OpenedDatabase> {
  return openDatabase({
    url: config.skills.database.url,
    embedded: config.embedded.postgres,
    embeddedPortSetting: 'loom.embedded.postgres.port',
    component: 'skill-gateway',
    schemaName: 'skill registry',
    migrations: skillGatewayMigrations,
    applicationName: 'loom-skill-gateway',
    logger,
  });
}
