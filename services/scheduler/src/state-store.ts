/** Why a fire happened: its cron time came, it was missed while no scheduler ran it, or TriggerNow. */
export type FireKind = 'cron' | 'catch-up' | 'manual';

/** How a fire ended. */
export type FireOutcomeName = 'started' | 'skipped' | 'queued' | 'published' | 'failed';

/** Fires of one schedule by how they ended. */
export interface FireCounts {
  started: number;
  skipped: number;
  queued: number;
  published: number;
  failed: number;
}

/** One fire of a workflow's schedule, identified by workflow and scheduled time. */
export interface FireClaim {
  readonly workflow: string;
  /** The cron time of the fire (whole seconds), or the moment of a TriggerNow. */
  readonly scheduledAt: Date;
  readonly kind: FireKind;
  /** Identity of the scheduler that claimed it. */
  readonly holder: string;
  readonly claimedAt: Date;
}

/** A fire that was claimed and has not ended: the holder stopped before starting it, or it waits as QUEUE. */
export interface UnfinishedFire extends FireClaim {
  readonly state: 'claimed' | 'queued';
}

/** What the scheduler keeps per workflow. */
export interface ScheduleRecord {
  readonly paused: boolean;
  /** The scheduled time of the latest cron or catch-up fire. */
  readonly lastFireTime?: Date;
  /** Every cron time up to this one has been handled (fired, skipped by catch-up, or passed while paused). */
  readonly handledUntil?: Date;
  readonly counts: FireCounts;
}

/** Optional detail of a settled fire. */
export interface SettleDetail {
  readonly runId?: string;
  readonly detail?: string;
}

/**
 * Where the scheduler keeps its state: a local file for one scheduler, or PostgreSQL shared by several. A fire is
 * claimed before it acts, so each (workflow, scheduled time) acts once, whichever scheduler gets to it.
 */
export interface SchedulerStateStore {
  /** Where the state lives, for logs (never credentials). */
  readonly description: string;
  /** The state of every workflow that has some. */
  records(): Promise<Map<string, ScheduleRecord>>;
  /** The state of one workflow, if it has some. */
  record(workflow: string): Promise<ScheduleRecord | undefined>;
  /**
   * Claims a fire. False when it was claimed before, by this or another scheduler, or when it is a cron or catch-up
   * fire of a paused schedule. A claimed cron or catch-up fire moves lastFireTime and handledUntil on.
   */
  claim(fire: FireClaim): Promise<boolean>;
  /** Records how a claimed fire ended, or that it waits for the running run to end (queued). */
  settle(fire: FireClaim, outcome: FireOutcomeName, detail?: SettleDetail): Promise<void>;
  /** Marks every cron time up to `until` handled without firing it (catch-up NONE and LATEST, resume). */
  markHandled(workflow: string, until: Date): Promise<void>;
  /** Pauses or resumes a workflow's schedule; resuming marks the time of the resume handled. */
  setPaused(workflow: string, paused: boolean, at: Date): Promise<ScheduleRecord>;
  /** Fires claimed and not ended, for the scheduler that takes over. */
  unfinished(): Promise<UnfinishedFire[]>;
  /** Deletes settled fires past their retention; answers how many. */
  prune(): Promise<number>;
  /** Drops the state of a deleted workflow. */
  forget(workflow: string): Promise<void>;
  close(): Promise<void>;
}

/** Counts with nothing counted. */
export function noFires(): FireCounts {
  return { started: 0, skipped: 0, queued: 0, published: 0, failed: 0 };
}
