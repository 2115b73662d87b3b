import { type Database, type Migration } from '@loom/postgres';
import type pg from 'pg';
import { type FireClaim, type FireOutcomeName, type ScheduleRecord, type SchedulerStateStore, type SettleDetail, type UnfinishedFire } from './state-store.js';

/** The scheduler's tables; relations are schema-qualified, as libs/postgres asks. */
export const schedulerMigrations: readonly Migration[] = [
  {
    version: 1,
    name: 'schedules, fires and the lease',
    sql: `
      CREATE TABLE public.scheduler_schedule (
        workflow text PRIMARY KEY,
        paused boolean NOT NULL DEFAULT false,
        last_fire_time timestamptz,
        handled_until timestamptz,
        fires_started bigint NOT NULL DEFAULT 0,
        fires_skipped bigint NOT NULL DEFAULT 0,
        fires_queued bigint NOT NULL DEFAULT 0,
        fires_published bigint NOT NULL DEFAULT 0,
        fires_failed bigint NOT NULL DEFAULT 0,
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE TABLE public.scheduler_fire (
        workflow text NOT NULL,
        fire_time timestamptz NOT NULL,
        kind text NOT NULL CHECK (kind IN ('cron', 'catch-up', 'manual')),
        holder text NOT NULL,
        claimed_at timestamptz NOT NULL,
        outcome text NOT NULL DEFAULT 'claimed' CHECK (outcome IN ('claimed', 'queued', 'started', 'skipped', 'published', 'failed')),
        run_id text NOT NULL DEFAULT '',
        detail text NOT NULL DEFAULT '',
        settled_at timestamptz,
        CONSTRAINT scheduler_fire_once UNIQUE (workflow, fire_time)
      );
      CREATE INDEX scheduler_fire_unfinished ON public.scheduler_fire (claimed_at) WHERE outcome IN ('claimed', 'queued');
      CREATE TABLE public.scheduler_lease (
        id integer PRIMARY KEY CHECK (id = 1),
        holder text NOT NULL,
        acquired_at timestamptz NOT NULL
      );`,
  },
];

/** How long settled fires are kept in scheduler_fire. */
export const FIRE_RETENTION_DAYS = 7;
/** A fire claimed longer ago than this and never settled is given up as failed rather than made up for. */
const UNFINISHED_HORIZON = '1 day';

interface ScheduleRow {
  workflow: string;
  paused: boolean;
  last_fire_time: Date | null;
  handled_until: Date | null;
  fires_started: string;
  fires_skipped: string;
  fires_queued: string;
  fires_published: string;
  fires_failed: string;
}

function recordOf(row: ScheduleRow): ScheduleRecord {
  return {
    paused: row.paused,
    ...(row.last_fire_time === null ? {} : { lastFireTime: row.last_fire_time }),
    ...(row.handled_until === null ? {} : { handledUntil: row.handled_until }),
    counts: {
      started: Number(row.fires_started),
      skipped: Number(row.fires_skipped),
      queued: Number(row.fires_queued),
      published: Number(row.fires_published),
      failed: Number(row.fires_failed),
    },
  };
}

const COUNT_COLUMN: Record<FireOutcomeName, string> = {
  started: 'fires_started',
  skipped: 'fires_skipped',
  queued: 'fires_queued',
  published: 'fires_published',
  failed: 'fires_failed',
};

/**
 * The state of several schedulers in PostgreSQL. A claim runs in one transaction that locks the workflow's
 * scheduler_schedule row, checks pause and handled_until, and inserts the fire into scheduler_fire, whose
 * UNIQUE (workflow, fire_time) lets each fire through once even when two schedulers race for it.
 */
export class PostgresStateStore implements SchedulerStateStore {
  constructor(
    private readonly db: Database,
    readonly description: string,
  ) {}

  async records(): Promise<Map<string, ScheduleRecord>> {
    const { rows } = await this.db.query<ScheduleRow>('SELECT * FROM public.scheduler_schedule');
    return new Map(rows.map((row) => [row.workflow, recordOf(row)]));
  }

  async record(workflow: string): Promise<ScheduleRecord | undefined> {
    const { rows } = await this.db.query<ScheduleRow>('SELECT * FROM public.scheduler_schedule WHERE workflow = $1', [workflow]);
    return rows[0] === undefined ? undefined : recordOf(rows[0]);
  }

  private async lockRow(client: pg.PoolClient, workflow: string): Promise<ScheduleRow> {
    await client.query('INSERT INTO public.scheduler_schedule (workflow) VALUES ($1) ON CONFLICT (workflow) DO NOTHING', [workflow]);
    const { rows } = await client.query<ScheduleRow>('SELECT * FROM public.scheduler_schedule WHERE workflow = $1 FOR UPDATE', [workflow]);
    return rows[0] as ScheduleRow;
  }

  claim(fire: FireClaim): Promise<boolean> {
    return this.db.transaction(async (client) => {
      const row = await this.lockRow(client, fire.workflow);
      if (fire.kind !== 'manual') {
        if (row.paused) return false;
        if (row.handled_until !== null && row.handled_until.getTime() >= fire.scheduledAt.getTime()) return false;
      }
      const inserted = await client.query(
        `INSERT INTO public.scheduler_fire (workflow, fire_time, kind, holder, claimed_at) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT ON CONSTRAINT scheduler_fire_once DO NOTHING`,
        [fire.workflow, fire.scheduledAt, fire.kind, fire.holder, fire.claimedAt],
      );
      if (inserted.rowCount !== 1) return false;
      if (fire.kind !== 'manual') {
        await client.query(
          `UPDATE public.scheduler_schedule SET handled_until = $2, last_fire_time = greatest(last_fire_time, $2), updated_at = now()
           WHERE workflow = $1`,
          [fire.workflow, fire.scheduledAt],
        );
      }
      return true;
    });
  }

  async settle(fire: FireClaim, outcome: FireOutcomeName, detail: SettleDetail = {}): Promise<void> {
    await this.db.transaction(async (client) => {
      await client.query(
        `UPDATE public.scheduler_fire SET outcome = $3, run_id = $4, detail = $5, settled_at = CASE WHEN $3 = 'queued' THEN NULL ELSE now() END
         WHERE workflow = $1 AND fire_time = $2`,
        [fire.workflow, fire.scheduledAt, outcome, detail.runId ?? '', (detail.detail ?? '').slice(0, 1000)],
      );
      await client.query(
        `UPDATE public.scheduler_schedule SET ${COUNT_COLUMN[outcome]} = ${COUNT_COLUMN[outcome]} + 1, updated_at = now() WHERE workflow = $1`,
        [fire.workflow],
      );
    });
  }

  async markHandled(workflow: string, until: Date): Promise<void> {
    await this.db.query(
      `INSERT INTO public.scheduler_schedule (workflow, handled_until) VALUES ($1, $2)
       ON CONFLICT (workflow) DO UPDATE SET handled_until = greatest(public.scheduler_schedule.handled_until, $2), updated_at = now()`,
      [workflow, until],
    );
  }

  setPaused(workflow: string, paused: boolean, at: Date): Promise<ScheduleRecord> {
    return this.db.transaction(async (client) => {
      const row = await this.lockRow(client, workflow);
      const handledUntil = row.paused && !paused && (row.handled_until === null || row.handled_until < at) ? at : row.handled_until;
      const { rows } = await client.query<ScheduleRow>(
        'UPDATE public.scheduler_schedule SET paused = $2, handled_until = $3, updated_at = now() WHERE workflow = $1 RETURNING *',
        [workflow, paused, handledUntil],
      );
      return recordOf(rows[0] as ScheduleRow);
    });
  }

  async unfinished(): Promise<UnfinishedFire[]> {
    await this.db.query(
      `UPDATE public.scheduler_fire SET outcome = 'failed', detail = 'abandoned: claimed too long ago to make up for', settled_at = now()
       WHERE outcome IN ('claimed', 'queued') AND claimed_at < now() - interval '${UNFINISHED_HORIZON}'`,
    );
    const { rows } = await this.db.query<{
      workflow: string;
      fire_time: Date;
      kind: FireClaim['kind'];
      holder: string;
      claimed_at: Date;
      outcome: UnfinishedFire['state'];
    }>(`SELECT workflow, fire_time, kind, holder, claimed_at, outcome FROM public.scheduler_fire WHERE outcome IN ('claimed', 'queued') ORDER BY fire_time`);
    return rows.map((row) => ({
      workflow: row.workflow,
      scheduledAt: row.fire_time,
      kind: row.kind,
      holder: row.holder,
      claimedAt: row.claimed_at,
      state: row.outcome,
    }));
  }

  /** Deletes settled fires older than FIRE_RETENTION_DAYS; answers how many. */
  async prune(): Promise<number> {
    const result = await this.db.query(
      `DELETE FROM public.scheduler_fire WHERE outcome NOT IN ('claimed', 'queued') AND fire_time < now() - interval '${FIRE_RETENTION_DAYS} days'`,
    );
    return result.rowCount ?? 0;
  }

  async forget(workflow: string): Promise<void> {
    await this.db.transaction(async (client) => {
      await client.query('DELETE FROM public.scheduler_fire WHERE workflow = $1', [workflow]);
      await client.query('DELETE FROM public.scheduler_schedule WHERE workflow = $1', [workflow]);
    });
  }

  close(): Promise<void> {
    return this.db.close();
  }
}
