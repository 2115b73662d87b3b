import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { type LoomConfig } from '@loom/config';
import { openDatabase } from '@loom/postgres';
import { type Logger } from '@loom/telemetry';
import { FileStateStore } from './file-state-store.js';
import { type Leadership, LocalLeadership, PostgresLeadership } from './leadership.js';
import { PostgresStateStore, schedulerMigrations } from './postgres-state-store.js';
import { type SchedulerStateStore } from './state-store.js';

/** Where a scheduler keeps its state and how it learns whether it leads. */
export interface SchedulerStorage {
  readonly store: SchedulerStateStore;
  readonly leadership: Leadership;
}

/** This process's identity as a scheduler: host, pid and a random tag (a restarted container may reuse its pid). */
export function schedulerIdentity(): string {
  return `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
}

/**
 * Opens the scheduler's state: with `loom.scheduler.database.url`, PostgreSQL (migrated) and leadership through its
 * advisory lock; without, the local state file and a scheduler that leads alone.
 */
export async function openSchedulerStorage(config: Pick<LoomConfig, 'scheduler'>, logger: Logger, identity = schedulerIdentity()): Promise<SchedulerStorage> {
  const url = config.scheduler.database.url;
  if (url === undefined) {
    const store = await FileStateStore.open(config.scheduler.stateFile);
    logger.info({ state: store.description }, 'scheduler state in a local file; one scheduler runs (set loom.scheduler.database.url for several)');
    return { store, leadership: new LocalLeadership(identity) };
  }
  const { db, target } = await openDatabase({
    url,
    component: 'scheduler',
    migrations: schedulerMigrations,
    applicationName: 'loom-scheduler',
    max: 4,
    logger,
  });
  const store = new PostgresStateStore(db, `PostgreSQL ${target.address}`);
  const leadership = new PostgresLeadership({
    url,
    identity,
    pollMs: config.scheduler.lease.pollMs,
    timeoutMs: config.scheduler.lease.timeoutMs,
    logger,
    query: (text, params) => db.query(text, params),
  });
  logger.info({ state: store.description, identity, pollMs: config.scheduler.lease.pollMs }, 'scheduler state in PostgreSQL; the lease holder acts');
  return { store, leadership };
}
