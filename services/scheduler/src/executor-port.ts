import { Metadata, status } from '@grpc/grpc-js';
import { type ExecutorClient, type GetWorkflowStatusResponse, type WatchRunResponse, WorkflowState } from '@loom/contracts';
import { call, isServiceError } from '@loom/service-kit';

/** Metadata a fire's StartWorkflow carries, so the executor's logs and a test can tell which fire started a run. */
export const SCHEDULED_AT_HEADER = 'loom-scheduled-at';
export const FIRE_KIND_HEADER = 'loom-fire-kind';

/** Deadline of the executor calls the scheduler makes; a start opens secrets and audits, so it gets longer. */
const CALL_DEADLINE_MS = 10_000;
const START_DEADLINE_MS = 60_000;

/** A run as the executor reports it. */
export interface RunInfo {
  readonly runId: string;
  readonly state: WorkflowState;
  readonly startedAt?: Date;
  readonly lastError: string;
  /** From a start: the workflow was running (or paused) already, this is that run, nothing was started. */
  readonly alreadyRunning?: boolean;
}

/** True while a run has not ended: STARTING, RUNNING, PAUSED or STOPPING (a run ends as STOPPED or FAILED). */
export function isGoing(state: WorkflowState | undefined): boolean {
  return (
    state === WorkflowState.WORKFLOW_STATE_STARTING ||
    state === WorkflowState.WORKFLOW_STATE_RUNNING ||
    state === WorkflowState.WORKFLOW_STATE_PAUSED ||
    state === WorkflowState.WORKFLOW_STATE_STOPPING
  );
}

/** True for STOPPED and FAILED. */
export function hasEnded(state: WorkflowState | undefined): boolean {
  return state === WorkflowState.WORKFLOW_STATE_STOPPED || state === WorkflowState.WORKFLOW_STATE_FAILED;
}

/** The state's name without its prefix (RUNNING). */
export function stateName(state: WorkflowState | undefined): string {
  return state === undefined ? 'UNKNOWN' : (WorkflowState[state] ?? String(state)).replace('WORKFLOW_STATE_', '');
}

/** True when a call failed because the executor could not be reached (the call never ran). */
export function isUnavailable(error: unknown): boolean {
  return isServiceError(error) && (error.code === status.UNAVAILABLE || error.code === status.DEADLINE_EXCEEDED);
}

/** One line for an error of an executor call. */
export function describeError(error: unknown): string {
  if (isServiceError(error)) return `${status[error.code]}: ${error.details}`;
  return error instanceof Error ? error.message : String(error);
}

/** The scheduler's side of loom.v1.Executor: the calls it makes, with its deadlines. */
export class ExecutorPort {
  constructor(private readonly client: () => ExecutorClient) {}

  /** Starts a workflow; `fire` tags the call with the fire that asks for it. */
  async start(name: string, fire?: { scheduledAt: Date; kind: string }): Promise<RunInfo> {
    const metadata = new Metadata();
    if (fire !== undefined) {
      metadata.set(SCHEDULED_AT_HEADER, fire.scheduledAt.toISOString());
      metadata.set(FIRE_KIND_HEADER, fire.kind);
    }
    const response = await call(this.client(), 'startWorkflow', { name }, { deadlineMs: START_DEADLINE_MS, metadata });
    return { runId: response.runId, state: response.state, lastError: '', alreadyRunning: response.alreadyRunning };
  }

  /** The workflow's latest run, or undefined when the executor has none (never started there, or restarted since). */
  async status(name: string): Promise<RunInfo | undefined> {
    let response: GetWorkflowStatusResponse;
    try {
      response = await call(this.client(), 'getWorkflowStatus', { name }, { deadlineMs: CALL_DEADLINE_MS });
    } catch (error) {
      if (isServiceError(error) && error.code === status.NOT_FOUND) return undefined;
      throw error;
    }
    return {
      runId: response.runId,
      state: response.state,
      ...(response.startedAt === undefined ? {} : { startedAt: response.startedAt }),
      lastError: response.lastError,
    };
  }

  /** Stops a run (the executor's default drain). */
  async stop(name: string): Promise<void> {
    await call(this.client(), 'stopWorkflow', { name, drainTimeout: undefined }, { deadlineMs: START_DEADLINE_MS });
  }

  /** Hands a message to an inlet of a running workflow; the id makes a repeated publish recognisable. */
  async publish(name: string, inlet: string, body: Record<string, unknown>, messageId: string): Promise<string> {
    const response = await call(
      this.client(),
      'publishMessage',
      { workflowName: name, inlet, body, headers: { 'loom-trigger': 'schedule' }, messageId },
      { deadlineMs: CALL_DEADLINE_MS },
    );
    return response.messageId;
  }

  /**
   * Follows a run: `onEvent` sees each state change. Resolves when the stream ends (the run ended, or `signal`
   * aborted); rejects with the call's error when the executor goes away.
   */
  watch(name: string, onEvent: (event: WatchRunResponse) => void, signal: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal.aborted) {
        resolve();
        return;
      }
      const stream = this.client().watchRun({ name });
      const abort = (): void => stream.cancel();
      signal.addEventListener('abort', abort, { once: true });
      stream.on('data', (event: WatchRunResponse) => onEvent(event));
      stream.on('error', (error: Error) => {
        signal.removeEventListener('abort', abort);
        if (signal.aborted) resolve();
        else reject(error);
      });
      stream.on('end', () => {
        signal.removeEventListener('abort', abort);
        resolve();
      });
    });
  }
}
