import { AuditEventType, type ExecutorService, type FailedMessage, type FailedMessageFilter } from '@loom/contracts';
import { FailedPreconditionError, ValidationError } from '@loom/domain';
import { type AsyncImplementation, type CallContext, callerIdentity, callerMay } from '@loom/service-kit';
import { type Executor, WorkflowNotRunningError } from '../executor.service.js';
import { type FailureSelection } from './failed-messages.js';
import { type FailureFilter, type StoredFailure } from './failure-store.js';
import { type WorkflowRun } from '../runtime/workflow-run.js';

/** The permission that shows a failed message's body and headers (operator and admin; a viewer sees the metadata). */
export const READ_MESSAGE_CONTENT = 'read-message-content';

type FailureRpcs = 'listFailedMessages' | 'getFailedMessage' | 'retryFailedMessages' | 'discardFailedMessages';

/** The loom.v1.Executor handlers of the failure store (issue 50). */
export function failureHandlers(executor: Executor): Pick<AsyncImplementation<typeof ExecutorService>, FailureRpcs> {
  const failures = executor.failures;
  return {
    async listFailedMessages(request, context) {
      const filter = await filterOf(executor, request.filter);
      const page = await failures.list(filter, request.pageSize, request.pageToken);
      const content = callerMay(context.metadata, READ_MESSAGE_CONTENT);
      return {
        messages: page.records.map((record) => failedMessageOf(record, content)),
        nextPageToken: page.nextPageToken,
        total: page.total,
        countsByKind: { ...page.countsByKind },
      };
    },

    async getFailedMessage(request, context) {
      if (request.workflow === '') throw ValidationError.of('workflow', 'is required', 'MISSING_FIELD');
      const workflow = await executor.storedName(request.workflow);
      const record = await failures.get(workflow, request.id);
      return { message: failedMessageOf(record, callerMay(context.metadata, READ_MESSAGE_CONTENT)) };
    },

    async retryFailedMessages(request, context) {
      const selection = await selectionOf(executor, request);
      const workflow = selection.filter.workflow;
      const retried = await failures.retry(() => runToRetryInto(executor, workflow), selection);
      auditSelection(executor, context, AuditEventType.AUDIT_EVENT_TYPE_FAILED_MESSAGES_RETRIED, selection, { retried: String(retried) });
      return { retried };
    },

    async discardFailedMessages(request, context) {
      const selection = await selectionOf(executor, request);
      const discarded = await failures.discard(selection);
      auditSelection(executor, context, AuditEventType.AUDIT_EVENT_TYPE_FAILED_MESSAGES_DISCARDED, selection, { discarded: String(discarded) });
      return { discarded };
    },
  };
}

/** The running run a retry sends into; a workflow deleted since, or not running here, is refused with what to do. */
async function runToRetryInto(executor: Executor, workflow: string): Promise<WorkflowRun> {
  const deleted = (): FailedPreconditionError =>
    new FailedPreconditionError(
      `workflow '${workflow}' was deleted: its failed messages cannot be retried, only discarded (loom failures discard ${workflow} --all)`,
    );
  let run: WorkflowRun;
  try {
    run = await executor.requireRun(workflow, 'filter.workflow');
  } catch (error) {
    if (error instanceof WorkflowNotRunningError && error.stored === false) throw deleted();
    throw error;
  }
  if (run.state === 'RUNNING') return run;
  if ((await executor.isStored(workflow)) === false) throw deleted();
  throw new FailedPreconditionError(`workflow '${workflow}' is ${run.state.toLowerCase()} here: start it (loom workflow start ${workflow}) before a retry`);
}

async function filterOf(executor: Executor, filter: FailedMessageFilter | undefined): Promise<FailureFilter> {
  if (filter === undefined || filter.workflow === '') throw ValidationError.of('filter.workflow', 'is required', 'MISSING_FIELD');
  const since = filter.since?.getTime();
  const until = filter.until?.getTime();
  if (since !== undefined && until !== undefined && since >= until) {
    throw ValidationError.of('filter.until', 'must be after filter.since', 'INVALID_VALUE');
  }
  return {
    workflow: await executor.storedName(filter.workflow),
    ...(filter.component === '' ? {} : { component: filter.component }),
    ...(filter.kind === '' ? {} : { kind: filter.kind }),
    ...(since === undefined ? {} : { sinceMs: since }),
    ...(until === undefined ? {} : { untilMs: until }),
  };
}

async function selectionOf(executor: Executor, request: { ids: string[]; filter?: FailedMessageFilter; all: boolean }): Promise<FailureSelection> {
  const filter = await filterOf(executor, request.filter);
  const narrowed = filter.component !== undefined || filter.kind !== undefined || filter.sinceMs !== undefined || filter.untilMs !== undefined;
  if (request.ids.length > 0 && (narrowed || request.all)) {
    throw ValidationError.of('ids', 'give ids or a filter (or all), not both', 'CONFLICTING_FIELDS');
  }
  if (request.ids.some((id) => id === '')) throw ValidationError.of('ids', 'must not hold an empty id', 'INVALID_VALUE');
  return { ids: request.ids, filter, all: request.all };
}

function auditSelection(executor: Executor, context: CallContext, type: AuditEventType, selection: FailureSelection, counts: Record<string, string>): void {
  const { filter, ids, all } = selection;
  const what =
    ids.length > 0
      ? { ids: ids.slice(0, 20).join(','), ...(ids.length > 20 ? { idsTotal: String(ids.length) } : {}) }
      : {
          all: String(all),
          ...(filter.component === undefined ? {} : { component: filter.component }),
          ...(filter.kind === undefined ? {} : { kind: filter.kind }),
          ...(filter.sinceMs === undefined ? {} : { since: new Date(filter.sinceMs).toISOString() }),
          ...(filter.untilMs === undefined ? {} : { until: new Date(filter.untilMs).toISOString() }),
        };
  executor.auditAs(type, filter.workflow, callerIdentity(context.metadata), { ...counts, ...what });
}

/** A record as the API answers it: the message only to a caller that may read message content. */
export function failedMessageOf(record: StoredFailure, content: boolean): FailedMessage {
  const { kind, retryable, message, cause } = record.failure;
  return {
    id: record.id,
    workflow: record.workflow,
    workflowVersion: record.workflowVersion,
    component: record.component,
    failure: { kind, retryable, message, cause: cause ?? '' },
    attempts: record.attempts,
    firstFailed: new Date(record.firstFailed),
    lastFailed: new Date(record.lastFailed),
    messageId: record.messageId,
    message: content && record.message !== undefined ? { id: record.message.id, body: record.message.body, headers: { ...record.message.headers } } : undefined,
    traceId: record.traceId ?? '',
    contentKept: record.message !== undefined,
  };
}
