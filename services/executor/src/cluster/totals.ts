import { type ComponentStatus, type ExecutorRunStatus as ExecutorRunStatusProto, type GetWorkflowStatusResponse, WorkflowState } from '@loom/contracts';
import { type RunState, type WorkflowRun } from '../runtime/workflow-run.js';
import { type ExecutorRunStatus } from './executor-status.js';
import { type DesiredState } from './run-state.js';

/** A run state as loom.v1.WorkflowState. */
export const WORKFLOW_STATES: Record<RunState, WorkflowState> = {
  STARTING: WorkflowState.WORKFLOW_STATE_STARTING,
  RUNNING: WorkflowState.WORKFLOW_STATE_RUNNING,
  PAUSED: WorkflowState.WORKFLOW_STATE_PAUSED,
  STOPPING: WorkflowState.WORKFLOW_STATE_STOPPING,
  STOPPED: WorkflowState.WORKFLOW_STATE_STOPPED,
  FAILED: WorkflowState.WORKFLOW_STATE_FAILED,
};

/** Each component's counters summed over the executors, in the order the components first appear. */
export function componentTotals(rows: readonly ExecutorRunStatus[]): ComponentStatus[] {
  const totals = new Map<string, ComponentStatus>();
  for (const row of rows) {
    for (const counters of row.components) {
      const total = totals.get(counters.name);
      if (total === undefined) {
        totals.set(counters.name, { ...counters });
        continue;
      }
      total.messagesIn += counters.messagesIn;
      total.messagesOut += counters.messagesOut;
      total.messagesFailed += counters.messagesFailed;
      total.messagesRetried += counters.messagesRetried;
      total.queueDepth += counters.queueDepth;
      if (counters.lastError !== '') total.lastError = counters.lastError;
    }
  }
  return [...totals.values()];
}

/**
 * The workflow's state in the cluster: while it should run, RUNNING when any executor runs it, else STARTING while one
 * starts, else FAILED when every executor's run failed; while paused, PAUSED once any executor paused; once stopped,
 * STOPPING while any executor still stops it.
 */
export function clusterState(desired: DesiredState | undefined, rows: readonly ExecutorRunStatus[]): RunState {
  const any = (...states: RunState[]): boolean => rows.some((row) => states.includes(row.state));
  if (desired === 'STOPPED' || desired === undefined) {
    if (any('STOPPING', 'RUNNING', 'PAUSED', 'STARTING')) return 'STOPPING';
    return rows.length > 0 && rows.every((row) => row.state === 'FAILED') ? 'FAILED' : 'STOPPED';
  }
  if (desired === 'PAUSED' && any('PAUSED')) return 'PAUSED';
  if (any('RUNNING', 'PAUSED')) return any('RUNNING') ? 'RUNNING' : 'PAUSED';
  if (any('STARTING') || rows.length === 0) return 'STARTING';
  return any('STOPPING') ? 'STOPPING' : 'FAILED';
}

/** One executor's row as loom.v1.ExecutorRunStatus. */
export function executorRunToProto(row: ExecutorRunStatus): ExecutorRunStatusProto {
  return {
    executorId: row.executorId,
    runId: row.runId,
    state: WORKFLOW_STATES[row.state],
    startedAt: new Date(row.startedAt),
    components: row.components.map((counters) => ({ ...counters })),
    lastError: row.error,
    updatedAt: new Date(row.updatedAt),
  };
}

/** What GetWorkflowStatus answers in a cluster: the totals, each executor's part, and who answered. */
export function workflowStatusOf(
  workflow: string,
  rows: readonly ExecutorRunStatus[],
  desired: DesiredState | undefined,
  local: WorkflowRun | undefined,
  executorId: string,
): GetWorkflowStatusResponse {
  const first = rows[0];
  return {
    name: workflow,
    runId: local?.runId ?? first?.runId ?? '',
    state: WORKFLOW_STATES[clusterState(desired, rows)],
    startedAt: local?.startedAt ?? (first === undefined ? undefined : new Date(first.startedAt)),
    components: componentTotals(rows),
    lastError: local?.error || rows.find((row) => row.error !== '')?.error || '',
    executors: rows.map(executorRunToProto),
    executorId,
  };
}
