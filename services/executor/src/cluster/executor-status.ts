import { jetStreamToken, type KV, KvWatchInclude, type Messaging } from '@loom/messaging';
import { type ComponentCounters } from '../runtime/run-graph.js';
import { type RunState } from '../runtime/workflow-run.js';

/** The bucket of each executor's part of each workflow, kept for the heartbeat time (the lease time) after its last write. */
export const EXECUTOR_STATUS_BUCKET = 'loom_executor_runs';

/** One executor's part of a workflow's run, as it last wrote it. */
export interface ExecutorRunStatus {
  readonly executorId: string;
  readonly workflow: string;
  /** This executor's run of it ('' when its start failed before a run existed). */
  readonly runId: string;
  readonly generation: string;
  readonly state: RunState;
  readonly error: string;
  /** ISO times. */
  readonly startedAt: string;
  readonly updatedAt: string;
  readonly components: readonly ComponentCounters[];
}

const encoder = new TextEncoder();

/** `<workflow>.<executor>`, so one workflow's rows are `<workflow>.*`. */
function keyOf(workflow: string, executorId: string): string {
  return `${jetStreamToken(workflow)}.${jetStreamToken(executorId)}`;
}

/**
 * Every executor's part of every workflow (issue 35) in a JetStream key-value bucket whose max_age is the heartbeat
 * time: each executor writes its rows on every change of state and every third of that time, so the rows of an
 * executor that is gone drop out of the bucket by themselves. Chosen over request/reply: a status answers at once
 * from the bucket, without waiting out a timeout for executors that may or may not be there.
 */
export class ExecutorStatusBoard {
  private constructor(private readonly bucket: KV) {}

  /** Opens (or makes) the bucket with this heartbeat time. */
  static async open(messaging: Messaging, heartbeatMs: number): Promise<ExecutorStatusBoard> {
    return new ExecutorStatusBoard(await messaging.keyValue(EXECUTOR_STATUS_BUCKET, { ttlMs: heartbeatMs }));
  }

  /** Writes one executor's row of a workflow. */
  async write(row: ExecutorRunStatus): Promise<void> {
    await this.bucket.put(keyOf(row.workflow, row.executorId), encoder.encode(JSON.stringify(row)));
  }

  /** Removes one executor's row of a workflow (an executor leaving). */
  async remove(workflow: string, executorId: string): Promise<void> {
    await this.bucket.delete(keyOf(workflow, executorId));
  }

  /** Calls `onRow` with each row of a workflow written from now on, until the returned function is called. */
  async watch(workflow: string, onRow: (row: ExecutorRunStatus) => void): Promise<() => void> {
    const updates = await this.bucket.watch({ key: `${jetStreamToken(workflow)}.*`, include: KvWatchInclude.UpdatesOnly, ignoreDeletes: true });
    void (async () => {
      // ends when stopped, or with the connection
      for await (const entry of updates) if (entry.operation === 'PUT') onRow(entry.json<ExecutorRunStatus>());
    })().catch(() => undefined);
    return () => updates.stop();
  }

  /** The executors with a row of any workflow (each running, or lately running, a part of one), by id. */
  async executorIds(): Promise<string[]> {
    return [...new Set((await this.rows()).map((row) => row.executorId))].sort();
  }

  /** Every executor's row of a workflow, by executor id. */
  async read(workflow: string): Promise<ExecutorRunStatus[]> {
    return (await this.rows(`${jetStreamToken(workflow)}.*`)).sort((one, other) => one.executorId.localeCompare(other.executorId));
  }

  /** The rows whose keys match `filter` (every row without one), removed ones left out. */
  private async rows(filter?: string): Promise<ExecutorRunStatus[]> {
    const keys: string[] = [];
    for await (const key of await this.bucket.keys(filter)) keys.push(key);
    const rows: ExecutorRunStatus[] = [];
    for (const key of keys) {
      const entry = await this.bucket.get(key);
      if (entry?.operation === 'PUT') rows.push(entry.json<ExecutorRunStatus>());
    }
    return rows;
  }
}
