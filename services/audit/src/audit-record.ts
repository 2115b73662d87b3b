import { createHash } from 'node:crypto';

/** The type names of audit events, as written in the log (the proto enum without its prefix). */
export const AUDIT_EVENT_TYPES = [
  'WORKFLOW_START',
  'WORKFLOW_PRIVILEGED_ACTION_EVENT',
  'PRIVILEGED_WORKFLOW_COMPONENT_FAILURE',
  'WORKFLOW_STOP',
  'WORKFLOW_CONFIG_PUSHED',
  'WORKFLOW_DELETED',
  'VARIABLE_CREATED',
  'VARIABLE_UPDATED',
  'VARIABLE_DELETED',
  'DECRYPT_DENIED',
  'KEY_ROTATED',
  'SCHEDULE_CHANGED',
  'MESSAGES_REPLAYED',
  'FAILED_MESSAGES_RETRIED',
  'FAILED_MESSAGES_DISCARDED',
  'WORKFLOW_PAUSED',
  'WORKFLOW_RESUMED',
  'PERMISSION_DENIED',
] as const;
export type AuditEventTypeName = (typeof AUDIT_EVENT_TYPES)[number];

/** What a caller says happened. */
export interface AuditFacts {
  readonly type: AuditEventTypeName;
  readonly workflow: string;
  readonly component: string;
  readonly componentType: string;
  readonly reason: string;
  readonly actor: string;
  readonly traceId: string;
  readonly attributes: Readonly<Record<string, string>>;
}

/** One line of the audit log: the facts, where they sit in the chain, and when. */
export interface AuditRecord extends AuditFacts {
  readonly seq: number;
  /** UTC, ISO 8601 with milliseconds. */
  readonly time: string;
  /** Hash of the previous record (GENESIS_HASH for the first). */
  readonly prev: string;
  /** SHA-256 over prev and this record's canonical JSON. */
  readonly hash: string;
}

/** `prev` of the first record. */
export const GENESIS_HASH = '0'.repeat(64);

/**
 * The canonical JSON of a record without its hash: fixed key order, attributes sorted by key. The hash covers it, so
 * any change of a field, including `prev` and `seq`, breaks the chain at that record.
 */
function canonical(record: Omit<AuditRecord, 'hash'>): string {
  const attributes = Object.fromEntries(Object.entries(record.attributes).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  return JSON.stringify({
    seq: record.seq,
    time: record.time,
    type: record.type,
    workflow: record.workflow,
    component: record.component,
    componentType: record.componentType,
    reason: record.reason,
    actor: record.actor,
    traceId: record.traceId,
    attributes,
    prev: record.prev,
  });
}

/** The hash a record must carry. */
export function hashOf(record: Omit<AuditRecord, 'hash'>): string {
  return createHash('sha256').update(record.prev).update('\n').update(canonical(record)).digest('hex');
}

/** Seals the facts into the next record of the chain, with its log line (the canonical JSON is built once for both). */
export function chainRecord(facts: AuditFacts, seq: number, prev: string, time: Date): { record: AuditRecord; line: string } {
  const unsealed = { ...facts, seq, time: time.toISOString(), prev };
  const json = canonical(unsealed);
  const hash = createHash('sha256').update(prev).update('\n').update(json).digest('hex');
  return { record: { ...unsealed, hash }, line: `${json.slice(0, -1)},"hash":"${hash}"}\n` };
}

/** Reads one log line; undefined when it is not a whole, well-formed record (the hash is checked by verify, not here). */
export function parseLine(line: string): AuditRecord | undefined {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const record = value as Record<string, unknown>;
  const strings = ['time', 'type', 'workflow', 'component', 'componentType', 'reason', 'actor', 'traceId', 'prev', 'hash'];
  if (!Number.isSafeInteger(record.seq) || strings.some((key) => typeof record[key] !== 'string')) return undefined;
  if (typeof record.attributes !== 'object' || record.attributes === null || Array.isArray(record.attributes)) return undefined;
  return record as unknown as AuditRecord;
}
