import { trace } from '@opentelemetry/api';
import { type AuditEvent, AuditEventType, AuditService, type QueryResponse } from '@loom/contracts';
import { FailedPreconditionError, type FieldViolation, ValidationError } from '@loom/domain';
import { StreamChannel } from '@loom/foundation';
import { type AsyncImplementation, type ServiceInstance, type ServiceModule } from '@loom/service-kit';
import { type Logger } from '@loom/telemetry';
import { AuditLog } from './audit-log.js';
import { AUDIT_EVENT_TYPES, type AuditEventTypeName, type AuditFacts, type AuditRecord } from './audit-record.js';

/** Identities that may append: loom's own services, never an end user. */
export const AUDIT_WRITERS = ['executor', 'scheduler', 'config-store', 'secrets', 'skill-gateway'] as const;

const DEFAULT_PAGE_SIZE = 100;
const MAX_PAGE_SIZE = 1000;
/**
 * Live records one Watch stream holds for a slow watcher (while it reads, or while its replay from `from_sequence`
 * runs); past it the stream ends RESOURCE_EXHAUSTED and the watcher watches again from the sequence after its last.
 */
export const WATCH_CAPACITY = 10_000;
const PREFIX = 'AUDIT_EVENT_TYPE_';

function typeName(type: AuditEventType): AuditEventTypeName | undefined {
  const name = AuditEventType[type]?.slice(PREFIX.length);
  return (AUDIT_EVENT_TYPES as readonly string[]).includes(name ?? '') ? (name as AuditEventTypeName) : undefined;
}

function typeNumber(name: AuditEventTypeName): AuditEventType {
  return AuditEventType[`${PREFIX}${name}` as keyof typeof AuditEventType];
}

/** The fields each event type must carry, beyond its type. */
const REQUIRED: Partial<Record<AuditEventTypeName, (keyof AuditEvent)[]>> = {
  WORKFLOW_START: ['workflowName'],
  WORKFLOW_STOP: ['workflowName'],
  WORKFLOW_PRIVILEGED_ACTION_EVENT: ['workflowName', 'reason'],
  PRIVILEGED_WORKFLOW_COMPONENT_FAILURE: ['workflowName', 'componentName', 'componentType'],
  WORKFLOW_CONFIG_PUSHED: ['workflowName'],
  WORKFLOW_DELETED: ['workflowName'],
};

const snake = (field: string): string => field.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);

/** What is wrong with one event of a request, its fields named under `path` (`event`, `events[3]`). */
function violationsOf(event: AuditEvent | undefined, path: string): FieldViolation[] {
  if (event === undefined) return [{ field: path, description: 'is required', reason: 'MISSING_FIELD' }];
  const type = typeName(event.type);
  if (type === undefined) return [{ field: `${path}.type`, description: 'must be one of the audit event types', reason: 'INVALID_VALUE' }];
  return (REQUIRED[type] ?? [])
    .filter((field) => event[field] === '')
    .map((field) => ({ field: `${path}.${snake(field)}`, description: `is required for ${type}`, reason: 'MISSING_FIELD' }));
}

/** The facts of a checked event; the actor defaults to the caller, the trace id to the current trace. */
function factsOfChecked(event: AuditEvent, caller: string | undefined): AuditFacts {
  const activeTrace = trace.getActiveSpan()?.spanContext().traceId ?? '';
  return {
    type: typeName(event.type) as AuditEventTypeName,
    workflow: event.workflowName,
    component: event.componentName,
    componentType: event.componentType,
    reason: event.reason,
    actor: event.actor === '' ? (caller ?? 'anonymous') : event.actor,
    traceId: event.traceId === '' ? activeTrace : event.traceId,
    attributes: { ...event.attributes },
  };
}

/** The facts of an Append request, checked. */
export function factsOf(event: AuditEvent | undefined, caller: string | undefined): AuditFacts {
  const violations = violationsOf(event, 'event');
  if (violations.length > 0) throw new ValidationError(violations);
  return factsOfChecked(event as AuditEvent, caller);
}

/** Most events one AppendBatch call may carry. */
export const MAX_BATCH_EVENTS = 1000;

/** The facts of an AppendBatch request, every event checked before any is written. */
export function batchFactsOf(events: readonly AuditEvent[], caller: string | undefined): AuditFacts[] {
  if (events.length > MAX_BATCH_EVENTS) {
    throw ValidationError.of('events', `holds ${events.length} events; at most ${MAX_BATCH_EVENTS} per call`, 'INVALID_VALUE');
  }
  const violations = events.flatMap((event, index) => violationsOf(event, `events[${index}]`));
  if (violations.length > 0) throw new ValidationError(violations);
  return events.map((event) => factsOfChecked(event, caller));
}

/** A record as the loom.v1.AuditEvent message. */
export function eventOf(record: AuditRecord): AuditEvent {
  return {
    sequence: record.seq,
    time: new Date(record.time),
    type: typeNumber(record.type),
    workflowName: record.workflow,
    componentName: record.component,
    componentType: record.componentType,
    reason: record.reason,
    actor: record.actor,
    traceId: record.traceId,
    prevHash: record.prev,
    hash: record.hash,
    attributes: { ...record.attributes },
  };
}

/** Which records a Query or Watch wants. */
function matcher(types: readonly AuditEventType[], workflow: string, since?: Date, until?: Date): (record: AuditRecord) => boolean {
  const names = new Set(types.map((type) => typeName(type)));
  return (record) =>
    (names.size === 0 || names.has(record.type)) &&
    (workflow === '' || record.workflow === workflow) &&
    (since === undefined || record.time >= since.toISOString()) &&
    (until === undefined || record.time < until.toISOString());
}

function pageStart(token: string): number {
  if (token === '') return 1;
  const sequence = Number(Buffer.from(token, 'base64url').toString('utf8'));
  if (!Number.isSafeInteger(sequence) || sequence < 1) throw ValidationError.of('page_token', 'is not a token this service issued', 'INVALID_VALUE');
  return sequence;
}

/** How the Audit handlers are sized. */
export interface AuditImplementationOptions {
  /** Live records one Watch stream holds for a slow watcher (default WATCH_CAPACITY). */
  readonly watchCapacity?: number;
}

/** The loom.v1.Audit handlers over an open log. */
export function auditImplementation(log: AuditLog, options: AuditImplementationOptions = {}): AsyncImplementation<typeof AuditService> {
  return {
    async append(request, context) {
      const record = await log.append(factsOf(request.event, context.identity));
      return { sequence: record.seq, hash: record.hash };
    },

    async appendBatch(request, context) {
      const facts = batchFactsOf(request.events, context.identity);
      const records = await Promise.all(facts.map((event) => log.append(event)));
      return { acks: records.map((record) => ({ sequence: record.seq, hash: record.hash })) };
    },

    async query(request) {
      if (request.pageSize < 0) throw ValidationError.of('page_size', 'must not be negative', 'INVALID_VALUE');
      const limit = request.pageSize === 0 ? DEFAULT_PAGE_SIZE : Math.min(request.pageSize, MAX_PAGE_SIZE);
      const wanted = matcher(request.types, request.workflowName, request.since, request.until);
      const response: QueryResponse = { events: [], nextPageToken: '' };
      for await (const record of log.records(pageStart(request.pageToken))) {
        if (!wanted(record)) continue;
        if (response.events.length === limit) {
          response.nextPageToken = Buffer.from(String(record.seq)).toString('base64url');
          break;
        }
        response.events.push(eventOf(record));
      }
      return response;
    },

    async watch(request, send, context) {
      const wanted = matcher(request.types, request.workflowName);
      const live = new StreamChannel<AuditRecord>({ capacity: options.watchCapacity ?? WATCH_CAPACITY, signal: context.signal });
      // subscribed before the replay, so nothing falls between the two; duplicates are skipped by sequence
      const stop = log.subscribe((record) => {
        if (wanted(record)) live.push(record);
      });
      let sent = request.fromSequence > 0 ? request.fromSequence - 1 : log.durableSequence;
      try {
        if (request.fromSequence > 0) {
          const until = log.durableSequence;
          for await (const record of log.records(request.fromSequence)) {
            if (record.seq > until || context.signal.aborted) break;
            if (wanted(record)) await send({ event: eventOf(record) });
            sent = record.seq;
          }
        }
        for await (const record of live) {
          if (record.seq <= sent) continue;
          await send({ event: eventOf(record) });
          sent = record.seq;
        }
      } finally {
        stop();
        live.close();
      }
    },

    verify() {
      return log.verify();
    },
  };
}

/** With auditing off: Append succeeds and writes nothing; reading answers that there is nothing to read. */
export function disabledAuditImplementation(): AsyncImplementation<typeof AuditService> {
  const off = (): Promise<never> => Promise.reject(new FailedPreconditionError('audit logging is disabled (loom.security.audit.enabled=false)'));
  return {
    append: () => Promise.resolve({ sequence: 0, hash: '' }),
    appendBatch: (request) => Promise.resolve({ acks: request.events.map(() => ({ sequence: 0, hash: '' })) }),
    query: off,
    watch: off,
    verify: off,
  };
}

async function openLog(path: string, maxFileBytes: number, logger: Logger): Promise<AuditLog> {
  const { log, recovery } = await AuditLog.open({ path, maxFileBytes });
  if (recovery.truncatedBytes > 0) {
    logger.warn(
      { path, truncatedBytes: recovery.truncatedBytes, lastSequence: recovery.lastSequence },
      'audit log: cut off a torn last line left by a crash (it was never acknowledged)',
    );
  }
  logger.info({ path, lastSequence: recovery.lastSequence, maxFileBytes }, 'audit logging enabled');
  return log;
}

/** loom.v1.Audit, deployable alone (`loom serve --services audit`) or with the others. */
export const auditModule: ServiceModule<'security'> = {
  name: 'audit',
  fullName: 'loom.v1.Audit',
  configSections: ['security'],
  async create({ config, logger }): Promise<ServiceInstance> {
    const { enabled, log: file } = config.security.audit;
    if (!enabled) logger.warn({}, 'audit logging disabled (loom.security.audit.enabled=false): events are accepted and not written');
    const log = enabled ? await openLog(file.path, file.maxBytes, logger) : undefined;
    const implementation = log === undefined ? disabledAuditImplementation() : auditImplementation(log);
    return {
      addToServer(server) {
        server.addService('loom.v1.Audit', AuditService, implementation, { restrict: { append: AUDIT_WRITERS, appendBatch: AUDIT_WRITERS } });
      },
      close: () => log?.close() ?? Promise.resolve(),
    };
  },
};
