import { hash } from 'node:crypto';
import { type LoomMessage } from '../runtime/component.js';
import { type RedactedFailure } from '../redacted-failure.js';

/** A message kept in the failure store (issue 50), as the store holds it: plain JSON. */
export interface StoredFailure {
  /** The record's id: the same message failing again at the same component keeps it (recordId). */
  readonly id: string;
  /** The workflow's stored name. */
  readonly workflow: string;
  readonly workflowVersion: number;
  /** The component's plain name in the workflow. */
  readonly component: string;
  /** Its instance name (`<name>_<uuid>`), where a retry sends the message. */
  readonly instance: string;
  /** The last failure, redacted as the logs are. */
  readonly failure: RedactedFailure;
  /** Tries in all, each failing counting 1 and its retries. */
  readonly attempts: number;
  /** ISO 8601. */
  readonly firstFailed: string;
  readonly lastFailed: string;
  readonly messageId: string;
  /** The message as it reached the component, when its store_error_content was true. */
  readonly message?: LoomMessage;
  /** The W3C trace id of its traceparent, when it had one. */
  readonly traceId?: string;
}

/** What became of a put: kept, or refused because the workflow's store is full (loom.executor.failures.maxBytes). */
export type PutOutcome = 'kept' | 'full';

/**
 * Where failed messages are kept, per workflow: a JetStream key-value bucket in durable mode (KvFailureStore), a file in
 * the data directory in memory mode (FileFailureStore). A put of a record whose id is stored replaces it.
 */
export interface FailureStore {
  /** Keeps a record, merged with the one of its id already kept (attempts added, first failure kept); resolves once kept (as durably as the store keeps: see each). */
  put(record: StoredFailure): Promise<PutOutcome>;
  /** Keeps records as `put` does, in one call (the file store: one write); answers each one's outcome, in order. */
  putMany(records: readonly StoredFailure[]): Promise<PutOutcome[]>;
  /** Every record of a workflow (none for a workflow that has none). */
  list(workflow: string): Promise<StoredFailure[]>;
  get(workflow: string, id: string): Promise<StoredFailure | undefined>;
  /** Removes records; answers how many were there. */
  remove(workflow: string, ids: readonly string[]): Promise<number>;
  close(): Promise<void>;
}

/** A record's id: a hash of the component and the message's id (hex, a JetStream key and a file-safe token). */
export function recordId(instance: string, messageId: string): string {
  // one-shot hash of the joined text: the same digest as updating with each part, at half the cost a failure
  return hash('sha256', `${instance}\0${messageId}`, 'hex').slice(0, 32);
}

/** A new failure of a record already kept (of which only its attempts and first failure count): its attempts added on, its first failure kept. */
export function merged(earlier: Pick<StoredFailure, 'attempts' | 'firstFailed'> | undefined, record: StoredFailure): StoredFailure {
  if (earlier === undefined) return record;
  return { ...record, attempts: earlier.attempts + record.attempts, firstFailed: earlier.firstFailed };
}

/** The W3C trace id of a traceparent header (`00-<trace id>-<span id>-<flags>`), when it has one. */
export function traceIdOf(headers: Readonly<Record<string, string>>): string | undefined {
  const traceparent = headers.traceparent ?? headers.Traceparent;
  const match = traceparent === undefined ? null : /^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/.exec(traceparent.trim());
  return match?.[1];
}

/** Which records of a workflow: every field but the workflow optional. */
export interface FailureFilter {
  readonly workflow: string;
  readonly component?: string;
  readonly kind?: string;
  /** Last failed at or after (ms since the epoch). */
  readonly sinceMs?: number;
  /** Last failed before. */
  readonly untilMs?: number;
}

/** Whether a record matches a filter (the workflow aside: records are listed per workflow). */
export function matches(record: StoredFailure, filter: FailureFilter): boolean {
  if (filter.component !== undefined && record.component !== filter.component && record.instance !== filter.component) return false;
  if (filter.kind !== undefined && record.failure.kind !== filter.kind) return false;
  const last = Date.parse(record.lastFailed);
  if (filter.sinceMs !== undefined && last < filter.sinceMs) return false;
  if (filter.untilMs !== undefined && last >= filter.untilMs) return false;
  return true;
}

/** Newest failure first; the id breaks ties, so pages are stable. */
export function newestFirst(a: StoredFailure, b: StoredFailure): number {
  return b.lastFailed.localeCompare(a.lastFailed) || a.id.localeCompare(b.id);
}

/** Whether a record is past the store's age limit (0: none). */
export function expired(record: StoredFailure, maxAgeMs: number, now: number): boolean {
  return maxAgeMs > 0 && Date.parse(record.lastFailed) < now - maxAgeMs;
}
