import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { writeFileAtomic } from '@loom/foundation';
import { SchedulerStateError } from './errors.js';
import {
  type FireClaim,
  type FireCounts,
  type FireOutcomeName,
  noFires,
  type ScheduleRecord,
  type SchedulerStateStore,
  type UnfinishedFire,
} from './state-store.js';

const FORMAT = 'loom.scheduler.state/1';

interface StoredFire {
  scheduledAt: string;
  kind: FireClaim['kind'];
  holder: string;
  claimedAt: string;
  state: UnfinishedFire['state'];
}

interface StoredWorkflow {
  paused: boolean;
  lastFireTime?: string;
  handledUntil?: string;
  counts: FireCounts;
  unfinished: StoredFire[];
}

interface StateFile {
  format: typeof FORMAT;
  workflows: Record<string, StoredWorkflow>;
}

function recordOf(entry: StoredWorkflow): ScheduleRecord {
  return {
    paused: entry.paused,
    ...(entry.lastFireTime === undefined ? {} : { lastFireTime: new Date(entry.lastFireTime) }),
    ...(entry.handledUntil === undefined ? {} : { handledUntil: new Date(entry.handledUntil) }),
    counts: { ...entry.counts },
  };
}

function later(a: string | undefined, b: Date): string {
  return a !== undefined && Date.parse(a) >= b.getTime() ? a : b.toISOString();
}

/**
 * The state of a single scheduler in one JSON file (`loom.scheduler.stateFile`), rewritten atomically and durably on
 * every change; a claim is on disk before the fire acts. A cron fire is claimable once: its time must be after the
 * workflow's handledUntil, which the claim moves on.
 */
export class FileStateStore implements SchedulerStateStore {
  private changed = 0;
  private written = 0;
  private writing: Promise<void> | undefined;

  private constructor(
    private readonly path: string,
    private readonly state: StateFile,
  ) {}

  /** Reads the state file; a missing file is an empty state, one that is not a state file is a SchedulerStateError. */
  static async open(path: string): Promise<FileStateStore> {
    const absolute = resolve(path);
    let text: string;
    try {
      text = await readFile(absolute, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return new FileStateStore(absolute, { format: FORMAT, workflows: {} });
      throw new SchedulerStateError(`cannot read the scheduler state file ${absolute}: ${(error as Error).message}`, { cause: error });
    }
    let parsed: Partial<StateFile>;
    try {
      parsed = JSON.parse(text) as Partial<StateFile>;
    } catch (error) {
      throw new SchedulerStateError(`the scheduler state file ${absolute} is not JSON; move it away to start with an empty state`, { cause: error });
    }
    if (parsed.format !== FORMAT || typeof parsed.workflows !== 'object' || parsed.workflows === null) {
      throw new SchedulerStateError(`the scheduler state file ${absolute} is not in format ${FORMAT}; move it away to start with an empty state`);
    }
    return new FileStateStore(absolute, { format: FORMAT, workflows: parsed.workflows });
  }

  get description(): string {
    return `file ${this.path}`;
  }

  private entry(workflow: string): StoredWorkflow {
    let entry = this.state.workflows[workflow];
    if (entry === undefined) {
      entry = { paused: false, counts: noFires(), unfinished: [] };
      this.state.workflows[workflow] = entry;
    }
    return entry;
  }

  /** Resolves once a write that began after this call's changes is on disk; concurrent changes share writes. */
  private async persist(): Promise<void> {
    const mine = ++this.changed;
    while (this.written < mine) {
      if (this.writing === undefined) {
        const target = this.changed;
        this.writing = writeFileAtomic(this.path, `${JSON.stringify(this.state, null, 2)}\n`, { mode: 0o600 })
          .then(() => {
            this.written = Math.max(this.written, target);
          })
          .finally(() => {
            this.writing = undefined;
          });
      }
      await this.writing;
    }
  }

  records(): Promise<Map<string, ScheduleRecord>> {
    return Promise.resolve(new Map(Object.entries(this.state.workflows).map(([workflow, entry]) => [workflow, recordOf(entry)])));
  }

  record(workflow: string): Promise<ScheduleRecord | undefined> {
    const entry = this.state.workflows[workflow];
    return Promise.resolve(entry === undefined ? undefined : recordOf(entry));
  }

  /** Only unfinished fires are kept in the file: nothing to prune. */
  prune(): Promise<number> {
    return Promise.resolve(0);
  }

  async claim(fire: FireClaim): Promise<boolean> {
    const entry = this.entry(fire.workflow);
    if (fire.kind !== 'manual') {
      if (entry.paused) return false;
      if (entry.handledUntil !== undefined && Date.parse(entry.handledUntil) >= fire.scheduledAt.getTime()) return false;
      entry.handledUntil = fire.scheduledAt.toISOString();
      entry.lastFireTime = later(entry.lastFireTime, fire.scheduledAt);
    }
    entry.unfinished.push({
      scheduledAt: fire.scheduledAt.toISOString(),
      kind: fire.kind,
      holder: fire.holder,
      claimedAt: fire.claimedAt.toISOString(),
      state: 'claimed',
    });
    await this.persist();
    return true;
  }

  async settle(fire: FireClaim, outcome: FireOutcomeName): Promise<void> {
    const entry = this.entry(fire.workflow);
    entry.counts[outcome]++;
    const at = fire.scheduledAt.toISOString();
    const unfinished = entry.unfinished.find((candidate) => candidate.scheduledAt === at && candidate.kind === fire.kind);
    if (outcome === 'queued' && unfinished !== undefined) unfinished.state = 'queued';
    else entry.unfinished = entry.unfinished.filter((candidate) => candidate !== unfinished);
    await this.persist();
  }

  async markHandled(workflow: string, until: Date): Promise<void> {
    const entry = this.entry(workflow);
    entry.handledUntil = later(entry.handledUntil, until);
    await this.persist();
  }

  async setPaused(workflow: string, paused: boolean, at: Date): Promise<ScheduleRecord> {
    const entry = this.entry(workflow);
    if (entry.paused && !paused) entry.handledUntil = later(entry.handledUntil, at);
    entry.paused = paused;
    await this.persist();
    return recordOf(entry);
  }

  unfinished(): Promise<UnfinishedFire[]> {
    return Promise.resolve(
      Object.entries(this.state.workflows).flatMap(([workflow, entry]) =>
        entry.unfinished.map((fire) => ({
          workflow,
          scheduledAt: new Date(fire.scheduledAt),
          kind: fire.kind,
          holder: fire.holder,
          claimedAt: new Date(fire.claimedAt),
          state: fire.state,
        })),
      ),
    );
  }

  async forget(workflow: string): Promise<void> {
    if (this.state.workflows[workflow] === undefined) return;
    delete this.state.workflows[workflow];
    await this.persist();
  }

  async close(): Promise<void> {
    await this.writing;
  }
}
