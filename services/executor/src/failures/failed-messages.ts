import { join } from 'node:path';
import { metrics } from '@opentelemetry/api';
import { type ErrorKind, FailedPreconditionError, LoomError, plainInstanceName, ValidationError } from '@loom/domain';
import { type LoomConfig } from '@loom/config';
import { type Messaging, type Settlement } from '@loom/messaging';
import { type Logger, type SecretRedactor, TELEMETRY_SCOPE } from '@loom/telemetry';
import { redactedFailure } from '../redacted-failure.js';
import { type FailedDelivery, type KeepOutcome } from '../runtime/options.js';
import { type WorkflowRun } from '../runtime/workflow-run.js';
import { FileFailureStore } from './file-failure-store.js';
import { KvFailureStore } from './kv-failure-store.js';
import { type FailureFilter, type FailureStore, matches, newestFirst, type PutOutcome, recordId, type StoredFailure, traceIdOf } from './failure-store.js';

/** Records a list answers unless asked for fewer or more, and the most it answers. */
export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 1000;

/** A page of a workflow's failed messages. */
export interface FailurePage {
  readonly records: readonly StoredFailure[];
  readonly nextPageToken: string;
  readonly total: number;
  readonly countsByKind: Readonly<Record<string, number>>;
}

/** Which records a retry or a discard acts on: ids, or a filter (`all` needed when it names nothing but the workflow). */
export interface FailureSelection {
  readonly ids: readonly string[];
  readonly filter: FailureFilter;
  readonly all: boolean;
}

/** A failed message a retry may not send (no message kept, being retried already). */
export class FailedMessageNotRetryableError extends FailedPreconditionError {}

/** No failed message of this id is kept for the workflow: never kept, or retried or discarded since. */
export class FailedMessageNotFoundError extends LoomError {
  readonly kind: ErrorKind = 'not-found';

  constructor(
    readonly workflow: string,
    readonly id: string,
  ) {
    super(`no failed message '${id}' in workflow '${workflow}' (never kept, or retried or discarded since)`);
  }
}

/**
 * The executor's side of the failure store (issue 50): keeps each message a run failed for good (redacted, with the
 * workflow's version and the trace id), refuses one past the store's size with a log line and the metric
 * `loom.failures.refused`, and lists, sends again and discards the kept ones. A record being retried stays in the store
 * until all its message led to is finished (removed then), so a crash in between loses nothing: the record is still
 * there to retry; a message that fails again is kept again with its attempts counted on.
 */
export class FailedMessages {
  /** `<workflow>\0<id>` of records sent again and not yet finished: a second retry of one is refused. */
  private readonly retrying = new Set<string>();
  private readonly refused = metrics.getMeter(TELEMETRY_SCOPE).createCounter('loom.failures.refused', {
    description: 'failed messages the failure store refused (full: loom.executor.failures.maxBytes), by workflow',
  });
  private readonly kept = metrics.getMeter(TELEMETRY_SCOPE).createCounter('loom.failures.kept', {
    description: 'failed messages kept in the failure store, by workflow',
  });

  constructor(
    private readonly store: FailureStore,
    private readonly logger: Logger,
    private readonly redactor: SecretRedactor,
  ) {}

  /**
   * What a run of this workflow version keeps its failed messages with (RunOptions.keepFailed): a batch's failures in one
   * store call, each answered in order; never rejects.
   */
  keeper(workflow: string, version: number): (failed: readonly FailedDelivery[]) => Promise<KeepOutcome[]> {
    // a plain name is a SHA-1 away from its instance name: worked out once per component, not once per failure
    const plainNames = new Map<string, string>();
    const plainNameOf = (component: string): string => {
      let plain = plainNames.get(component);
      if (plain === undefined) plainNames.set(component, (plain = plainInstanceName(workflow, 'component', component)));
      return plain;
    };
    const recordOf = ({ component, message, failure, tries, keepContent }: FailedDelivery, now: string): StoredFailure => {
      const traceId = traceIdOf(message.headers);
      // the optional fields are set only when present: a record is plain JSON, with no undefined properties
      const record: { -readonly [K in keyof StoredFailure]: StoredFailure[K] } = {
        id: recordId(component, message.id),
        workflow,
        workflowVersion: version,
        component: plainNameOf(component),
        instance: component,
        failure: redactedFailure(failure, this.redactor),
        attempts: tries,
        firstFailed: now,
        lastFailed: now,
        messageId: message.id,
      };
      if (keepContent) record.message = { id: message.id, body: message.body, headers: message.headers };
      if (traceId !== undefined) record.traceId = traceId;
      return record;
    };
    return async (failed) => {
      const now = new Date().toISOString();
      const records = failed.map((delivery) => recordOf(delivery, now));
      let outcomes: PutOutcome[];
      try {
        outcomes = await this.store.putMany(records);
      } catch (error) {
        const text = this.redactor.redact(String(error));
        for (const record of records) {
          this.logger.error(
            { workflow, component: record.component, messageId: record.messageId, error: text },
            'failed message not kept: the failure store could not be written',
          );
        }
        return records.map(() => 'unavailable');
      }
      let kept = 0;
      const answers = outcomes.map((outcome, index): KeepOutcome => {
        if (outcome === 'kept') {
          kept++;
          return 'kept';
        }
        const record = records[index] as StoredFailure;
        this.refused.add(1, { workflow });
        this.logger.warn(
          { workflow, component: record.component, messageId: record.messageId, kind: record.failure.kind },
          'failed message not kept: the failure store of this workflow is full (loom.executor.failures.maxBytes); retry or discard its failed messages',
        );
        return 'refused';
      });
      if (kept > 0) this.kept.add(kept, { workflow });
      return answers;
    };
  }

  /** A page of the records matching a filter, newest failure first, with the count of all that match, by kind. */
  async list(filter: FailureFilter, pageSize: number, pageToken: string): Promise<FailurePage> {
    const size = pageSize === 0 ? DEFAULT_PAGE_SIZE : pageSize;
    if (size > MAX_PAGE_SIZE) throw ValidationError.of('page_size', `must be at most ${MAX_PAGE_SIZE}`, 'INVALID_VALUE');
    const offset = offsetOf(pageToken);
    const all = (await this.store.list(filter.workflow)).filter((record) => matches(record, filter)).sort(newestFirst);
    const countsByKind: Record<string, number> = {};
    for (const record of all) countsByKind[record.failure.kind] = (countsByKind[record.failure.kind] ?? 0) + 1;
    const records = all.slice(offset, offset + size);
    const next = offset + size < all.length ? Buffer.from(String(offset + size)).toString('base64url') : '';
    return { records, nextPageToken: next, total: all.length, countsByKind };
  }

  /** One record, or NOT_FOUND. */
  async get(workflow: string, id: string): Promise<StoredFailure> {
    if (id === '') throw ValidationError.of('id', 'is required', 'MISSING_FIELD');
    const record = await this.store.get(workflow, id);
    if (record === undefined) throw new FailedMessageNotFoundError(workflow, id);
    return record;
  }

  /** The records a selection names: every id must be stored (NOT_FOUND naming the first that is not), or those matching the filter. */
  async select(selection: FailureSelection): Promise<StoredFailure[]> {
    const { ids, filter, all } = selection;
    if (ids.length > 0) {
      const records: StoredFailure[] = [];
      for (const id of new Set(ids)) {
        const record = await this.store.get(filter.workflow, id);
        if (record === undefined) throw new FailedMessageNotFoundError(filter.workflow, id);
        records.push(record);
      }
      return records;
    }
    const narrowed = filter.component !== undefined || filter.kind !== undefined || filter.sinceMs !== undefined || filter.untilMs !== undefined;
    if (!narrowed && !all)
      throw ValidationError.of('ids', 'name the failed messages, or give a filter, or set all for every one of the workflow', 'MISSING_FIELD');
    return (await this.store.list(filter.workflow))
      .filter((record) => matches(record, filter))
      .sort(newestFirst)
      .reverse();
  }

  /**
   * Sends the selected records again into the run `runOf` answers once they are found (the workflow's running
   * version), each at the component that failed
   * it; answers how many were sent. Checked before anything is sent: a record without its message (store_error_content
   * was false) or being retried already, when named by id, and a component the version no longer has, refuse the whole
   * call; by filter such records are left out.
   */
  async retry(runOf: () => Promise<WorkflowRun>, selection: FailureSelection): Promise<number> {
    const records = await this.select(selection);
    const run = await runOf();
    const workflow = run.workflow.name;
    const byIds = selection.ids.length > 0;
    const sendable: StoredFailure[] = [];
    for (const record of records) {
      const why =
        record.message === undefined
          ? 'has no message kept (its component had store_error_content false): discard it'
          : this.retrying.has(`${workflow}\0${record.id}`)
            ? 'is being retried now'
            : undefined;
      if (why !== undefined) {
        if (byIds) throw new FailedMessageNotRetryableError(`failed message '${record.id}' of workflow '${workflow}' ${why}`);
        continue;
      }
      run.checkRetryTarget(record.instance);
      sendable.push(record);
    }
    let sent = 0;
    for (const record of sendable) {
      const key = `${workflow}\0${record.id}`;
      this.retrying.add(key);
      try {
        await run.retryAt(record.instance, record.message!, this.settlementOf(workflow, record, key));
      } catch (error) {
        this.retrying.delete(key);
        if (sent === 0) throw error;
        this.logger.warn(
          { workflow, sent, left: sendable.length - sent, error: String(error) },
          'retry of failed messages cut short: the rest stay in the store',
        );
        break;
      }
      sent++;
    }
    return sent;
  }

  /** Removes the selected records; answers how many were removed. */
  async discard(selection: FailureSelection): Promise<number> {
    const records = await this.select(selection);
    return this.store.remove(
      selection.filter.workflow,
      records.map((record) => record.id),
    );
  }

  close(): Promise<void> {
    return this.store.close();
  }

  /** What becomes of a record sent again: removed once all its message led to is finished; kept (failed again, or cut short) otherwise. */
  private settlementOf(workflow: string, record: StoredFailure, key: string): Settlement {
    const settled = (): void => void this.retrying.delete(key);
    return {
      ack: () => {
        this.store
          .remove(workflow, [record.id])
          .catch((error: unknown) =>
            this.logger.error(
              { workflow, id: record.id, error: String(error) },
              'a retried failed message was processed but stays in the failure store: it could not be removed',
            ),
          )
          .finally(settled);
      },
      // failed again: kept again (its attempts counted on) before this
      term: settled,
      // the run ended first: the record stays
      nak: settled,
      working: () => undefined,
    };
  }
}

function offsetOf(pageToken: string): number {
  if (pageToken === '') return 0;
  const offset = Number(Buffer.from(pageToken, 'base64url').toString());
  if (!Number.isInteger(offset) || offset < 0) throw ValidationError.of('page_token', 'is not a token a list answered', 'INVALID_VALUE');
  return offset;
}

/** The executor's failure store: a JetStream key-value bucket per workflow with messaging (durable mode), else a file per workflow in the data directory. */
export function failedMessagesOf(
  config: Pick<LoomConfig, 'executor' | 'data'>,
  messaging: Messaging | undefined,
  logger: Logger,
  redactor: SecretRedactor,
): FailedMessages {
  const { maxBytes, maxAgeMs, directory, syncIntervalMs } = config.executor.failures;
  const store =
    messaging === undefined
      ? new FileFailureStore({ directory: directory ?? join(config.data.directory, 'failures'), maxBytes, maxAgeMs, syncIntervalMs })
      : new KvFailureStore(messaging, { maxBytes, maxAgeMs });
  return new FailedMessages(store, logger, redactor);
}
