import { FailedPreconditionError } from '@loom/domain';
import { withResolvers } from '@loom/foundation';
import { jetStreamToken, type KV, type KvEntry, type Messaging } from '@loom/messaging';

/** The bucket of every workflow's desired state in a cluster of executors (one key per workflow). */
export const RUN_STATE_BUCKET = 'loom_workflow_runs';

/** What a start or stop called on any executor asked of the cluster. */
export type DesiredState = 'RUNNING' | 'PAUSED' | 'STOPPED';

/** A workflow's desired state, as every executor reconciles its own run to it. */
export interface DesiredRun {
  /** The workflow's name. */
  readonly workflow: string;
  readonly state: DesiredState;
  /** Names one start: a start after a stop is a new generation, which every executor starts afresh. */
  readonly generation: string;
  /** How long each executor lets its in-flight messages drain when the state is STOPPED. */
  readonly drainTimeoutMs: number;
  /** The executor that was called. */
  readonly by: string;
}

/** A desired run with the bucket's revision of it (named by the next write, so two writers cannot both win). */
export interface RecordedRun {
  readonly run: DesiredRun;
  readonly revision: number;
}

/** Another executor changed the workflow's desired state between this one's read and write. */
export class RunStateConflictError extends FailedPreconditionError {}

const encoder = new TextEncoder();

/** The key of a workflow in the bucket. */
function keyOf(workflow: string): string {
  return jetStreamToken(workflow);
}

/**
 * The cluster's one run state (issue 35): per workflow its desired state in a JetStream key-value bucket. A write names
 * the revision it read, so of two executors changing the same workflow at once one wins and the other is told.
 */
export class ClusterRunState {
  private constructor(private readonly bucket: KV) {}

  /** Opens (or makes) the bucket. */
  static async open(messaging: Messaging): Promise<ClusterRunState> {
    return new ClusterRunState(await messaging.keyValue(RUN_STATE_BUCKET));
  }

  /** The workflow's desired state and its revision, or undefined when none was ever recorded. */
  async get(workflow: string): Promise<RecordedRun | undefined> {
    const entry = await this.bucket.get(keyOf(workflow));
    return entry === null ? undefined : recordedOf(entry);
  }

  /** Records a desired state over the revision read (0: none was); another write since is a RunStateConflictError. */
  async record(run: DesiredRun, revision: number): Promise<number> {
    const value = encoder.encode(JSON.stringify(run));
    try {
      return revision === 0 ? await this.bucket.create(keyOf(run.workflow), value) : await this.bucket.update(keyOf(run.workflow), value, revision);
    } catch (error) {
      if (error instanceof Error && error.message.includes('wrong last sequence')) {
        throw new RunStateConflictError(`workflow '${run.workflow}' was started or stopped by another executor at the same moment: try again`, {
          cause: error,
        });
      }
      throw error;
    }
  }

  /**
   * Calls `onChange` with every workflow's desired state, then with each change as it is recorded, in order, until
   * the returned function is called; resolves once the current states were handed over.
   */
  async watch(onChange: (run: DesiredRun) => void): Promise<() => void> {
    const { promise: ready, resolve: initialised } = withResolvers();
    const changes = await this.bucket.watch({ initializedFn: () => initialised(), ignoreDeletes: true });
    void (async () => {
      // ends when stopped, or with the connection
      for await (const entry of changes) {
        const recorded = recordedOf(entry);
        if (recorded !== undefined) onChange(recorded.run);
      }
    })().catch(() => undefined);
    await ready;
    return () => changes.stop();
  }
}

function recordedOf(entry: KvEntry): RecordedRun | undefined {
  if (entry.operation !== 'PUT') return undefined;
  return { run: entry.json<DesiredRun>(), revision: entry.revision };
}
