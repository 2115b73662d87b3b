import { randomUUID } from 'node:crypto';
import { AlreadyExistsError, NotFoundError } from '@loom/domain';
import { type Database } from '@loom/postgres';

/** A row of `ecosystem_variable`. With `encrypted`, `value` is the bare encrypted text. */
export interface VariableRow {
  readonly uuid: string;
  readonly createdAt: Date;
  readonly updatedAt: Date;
  readonly encrypted: boolean;
  readonly key: string;
  readonly value: string;
  readonly createdByUuid: string;
  readonly lastUpdatedByUuid: string | null;
}

interface DbRow {
  uuid: string;
  created_at: Date;
  updated_at: Date;
  encrypted: boolean;
  key: string;
  value: string;
  created_by_uuid: string;
  last_updated_by_uuid: string | null;
}

const COLUMNS = 'uuid, created_at, updated_at, encrypted, key, value, created_by_uuid, last_updated_by_uuid';
const UNIQUE_VIOLATION = '23505';

function toRow(row: DbRow): VariableRow {
  return {
    uuid: row.uuid,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    encrypted: row.encrypted,
    key: row.key,
    value: row.value,
    createdByUuid: row.created_by_uuid,
    lastUpdatedByUuid: row.last_updated_by_uuid,
  };
}

/**
 * Told of a written row inside its transaction, before the commit; throwing rolls the write back (the audit event of a
 * change goes first, so a change whose event cannot be written leaves nothing changed).
 */
export type BeforeCommit = (row: VariableRow) => Promise<void>;

const none: BeforeCommit = () => Promise.resolve();

/** Table `ecosystem_variable` through pg; every write is one statement or one transaction. */
export class VariableStore {
  constructor(private readonly db: Database) {}

  /** Inserts a variable; a taken key is AlreadyExistsError. */
  async create(input: { key: string; value: string; encrypted: boolean; createdByUuid: string }, beforeCommit: BeforeCommit = none): Promise<VariableRow> {
    try {
      return await this.db.transaction(async (client) => {
        const result = await client.query<DbRow>(
          `INSERT INTO public.ecosystem_variable (uuid, encrypted, key, value, created_by_uuid)
           VALUES ($1, $2, $3, $4, $5) RETURNING ${COLUMNS}`,
          [randomUUID(), input.encrypted, input.key, input.value, input.createdByUuid],
        );
        const row = toRow(result.rows[0] as DbRow);
        await beforeCommit(row);
        return row;
      });
    } catch (error) {
      if ((error as { code?: string }).code === UNIQUE_VIOLATION) throw new AlreadyExistsError('variable', input.key);
      throw error;
    }
  }

  /** Replaces a variable's value and encryption flag. */
  async update(key: string, input: { value: string; encrypted: boolean; updatedByUuid: string }, beforeCommit: BeforeCommit = none): Promise<VariableRow> {
    return this.db.transaction(async (client) => {
      const result = await client.query<DbRow>(
        `UPDATE public.ecosystem_variable
            SET value = $2, encrypted = $3, last_updated_by_uuid = $4, updated_at = now()
          WHERE key = $1 RETURNING ${COLUMNS}`,
        [key, input.value, input.encrypted, input.updatedByUuid],
      );
      const row = result.rows[0];
      if (row === undefined) throw new NotFoundError('variable', key);
      const updated = toRow(row);
      await beforeCommit(updated);
      return updated;
    });
  }

  /** One variable by key. */
  async get(key: string): Promise<VariableRow> {
    const result = await this.db.query<DbRow>(`SELECT ${COLUMNS} FROM public.ecosystem_variable WHERE key = $1`, [key]);
    const row = result.rows[0];
    if (row === undefined) throw new NotFoundError('variable', key);
    return toRow(row);
  }

  /** The variables with these keys; missing keys are simply absent from the map. */
  async getMany(keys: readonly string[]): Promise<Map<string, VariableRow>> {
    if (keys.length === 0) return new Map();
    const result = await this.db.query<DbRow>(`SELECT ${COLUMNS} FROM public.ecosystem_variable WHERE key = ANY($1::text[])`, [[...keys]]);
    return new Map(result.rows.map((row) => [row.key, toRow(row)]));
  }

  /** A page of variables in key order, after the key `after`. */
  async list(limit: number, after: string | undefined): Promise<VariableRow[]> {
    const result = await this.db.query<DbRow>(`SELECT ${COLUMNS} FROM public.ecosystem_variable WHERE ($1::text IS NULL OR key > $1) ORDER BY key LIMIT $2`, [
      after ?? null,
      limit,
    ]);
    return result.rows.map(toRow);
  }

  /** Deletes a variable; a missing key is NotFoundError. */
  async delete(key: string, beforeCommit: BeforeCommit = none): Promise<void> {
    await this.db.transaction(async (client) => {
      const result = await client.query<DbRow>(`DELETE FROM public.ecosystem_variable WHERE key = $1 RETURNING ${COLUMNS}`, [key]);
      const row = result.rows[0];
      if (row === undefined) throw new NotFoundError('variable', key);
      await beforeCommit(toRow(row));
    });
  }

  /** Re-encrypts every encrypted variable in one transaction; any failure changes nothing. */
  async reencryptAll(reencrypt: (value: string) => string): Promise<number> {
    return this.db.transaction(async (client) => {
      const rows = await client.query<{ uuid: string; value: string }>(
        'SELECT uuid, value FROM public.ecosystem_variable WHERE encrypted ORDER BY key FOR UPDATE',
      );
      for (const row of rows.rows) {
        await client.query('UPDATE public.ecosystem_variable SET value = $2, updated_at = now() WHERE uuid = $1', [row.uuid, reencrypt(row.value)]);
      }
      return rows.rows.length;
    });
  }
}
