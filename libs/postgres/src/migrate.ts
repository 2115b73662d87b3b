import { createHash } from 'node:crypto';
import pg from 'pg';
import { type Database } from './database.js';
import { InvalidMigrationsError, MigrationFailedError, MigrationHistoryError } from './errors.js';

/** One step of a component's schema; `version`s are positive, unique and strictly increasing within a component. */
export interface Migration {
  readonly version: number;
  readonly name: string;
  /** One or more statements; relations must be schema-qualified (`public.`), the search_path may put ag_catalog first. */
  readonly sql: string;
}

/** What a migrate call did. */
export interface MigrationResult {
  /** Versions this call applied, in order (empty when the schema was up to date). */
  readonly applied: number[];
}

/** The bookkeeping table, shared by every component (schema-qualified on purpose). */
export const MIGRATIONS_TABLE = 'public.loom_schema_migrations';

// first key of every advisory lock taken here: 'loom' in ASCII
const LOCK_NAMESPACE = 0x6c6f6f6d;
const TABLE_LOCK_KEY = 0;
const MAX_VERSION = 2_147_483_647;

interface AppliedRow {
  version: number;
  name: string;
}

/**
 * Brings a component's schema up to date: applies, in order, each migration not yet recorded in
 * public.loom_schema_migrations, each in its own transaction together with its bookkeeping row. Two processes
 * migrating at once apply each migration once: the check and the apply run under a transaction-scoped advisory
 * lock on the component. A recorded version with another name is a MigrationHistoryError (edited history).
 */
export async function migrate(db: Database, component: string, migrations: readonly Migration[]): Promise<MigrationResult> {
  validateMigrations(component, migrations);
  await ensureMigrationsTable(db);

  const recorded = await db.query<AppliedRow>(`SELECT version, name FROM ${MIGRATIONS_TABLE} WHERE component = $1 ORDER BY version`, [component]);
  const pending = migrations.filter((migration) => {
    const row = recorded.rows.find((candidate) => candidate.version === migration.version);
    if (row !== undefined) checkSameName(component, migration, row);
    return row === undefined;
  });

  const applied: number[] = [];
  for (const migration of pending) {
    // another process may have applied it since the read above: look again under the lock
    const didApply = await db.transaction(async (client) => {
      await client.query('SELECT pg_advisory_xact_lock($1, $2)', [LOCK_NAMESPACE, componentLockKey(component)]);
      const { rows } = await client.query<AppliedRow>(`SELECT version, name FROM ${MIGRATIONS_TABLE} WHERE component = $1 AND version >= $2 ORDER BY version`, [
        component,
        migration.version,
      ]);
      const [first] = rows;
      if (first?.version === migration.version) {
        checkSameName(component, migration, first);
        return false;
      }
      if (first !== undefined) {
        throw new MigrationHistoryError(
          component,
          migration.version,
          `is not applied but the later migration ${first.version} ('${first.name}') is; new migrations go after the last applied one`,
        );
      }
      await runMigrationSql(client, component, migration);
      await client.query(`INSERT INTO ${MIGRATIONS_TABLE} (component, version, name) VALUES ($1, $2, $3)`, [component, migration.version, migration.name]);
      return true;
    });
    if (didApply) applied.push(migration.version);
  }
  return { applied };
}

function validateMigrations(component: string, migrations: readonly Migration[]): void {
  if (component.trim() === '') throw new InvalidMigrationsError(component, 'the component name is empty');
  let previous: Migration | undefined;
  for (const migration of migrations) {
    const { version, name, sql } = migration;
    if (!Number.isSafeInteger(version) || version < 1 || version > MAX_VERSION) {
      throw new InvalidMigrationsError(component, `version ${version} is not a positive 32-bit integer`);
    }
    if (typeof name !== 'string' || name.trim() === '') throw new InvalidMigrationsError(component, `migration ${version} has no name`);
    if (typeof sql !== 'string' || sql.trim() === '') throw new InvalidMigrationsError(component, `migration ${version} ('${name}') has no SQL`);
    if (previous !== undefined && version === previous.version) {
      throw new InvalidMigrationsError(component, `version ${version} appears twice ('${previous.name}' and '${name}')`);
    }
    if (previous !== undefined && version < previous.version) {
      throw new InvalidMigrationsError(component, `versions must increase: ${version} ('${name}') comes after ${previous.version} ('${previous.name}')`);
    }
    previous = migration;
  }
}

async function ensureMigrationsTable(db: Database): Promise<void> {
  // checked first so that a role without CREATE on public can migrate once the table exists
  const existing = await db.query<{ present: boolean }>(`SELECT to_regclass('${MIGRATIONS_TABLE}') IS NOT NULL AS present`);
  if (existing.rows[0]?.present === true) return;
  await db.transaction(async (client) => {
    // two processes creating it at once would otherwise collide on the catalog's unique indexes
    await client.query('SELECT pg_advisory_xact_lock($1, $2)', [LOCK_NAMESPACE, TABLE_LOCK_KEY]);
    await client.query(`
      CREATE TABLE IF NOT EXISTS ${MIGRATIONS_TABLE} (
        component text NOT NULL,
        version integer NOT NULL,
        name text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (component, version)
      )`);
  });
}

async function runMigrationSql(client: pg.PoolClient, component: string, migration: Migration): Promise<void> {
  try {
    // no parameters: pg sends it as a simple query, so one migration may hold several statements
    await client.query(migration.sql);
  } catch (error) {
    // an error the server reported about the SQL; a lost connection stays what it is
    if (!(error instanceof pg.DatabaseError) || /^(08|57P0)/.test(error.code ?? '')) throw error;
    throw new MigrationFailedError(component, migration.version, migration.name, error.message, { cause: error });
  }
}

function checkSameName(component: string, migration: Migration, row: AppliedRow): void {
  if (row.name !== migration.name) {
    throw new MigrationHistoryError(
      component,
      migration.version,
      `was applied as '${row.name}' but the code names it '${migration.name}'; applied migrations must not change`,
    );
  }
}

/** Second advisory-lock key of a component: 32 bits of its SHA-256. */
function componentLockKey(component: string): number {
  return createHash('sha256').update(component).digest().readInt32BE(0);
}
