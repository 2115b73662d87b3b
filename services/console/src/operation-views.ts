import {
  type AuditEvent,
  AuditEventType,
  auditEventTypeFromJSON,
  auditEventTypeToJSON,
  circuitStateToJSON,
  type FailedMessage,
  type FailedMessageFilter,
  type ScheduleStatus,
} from '@loom/contracts';
import { ApiError } from './http-errors.js';
import { type LoomCalls } from './loom-calls.js';
import { stateName } from './workflow-views.js';

// The failures, audit, skills and schedules pages' answers, each from the service that owns the data, with the
// signed-in user's token.

/** A timestamp as ISO text, absent when unset. */
function iso(time: Date | undefined): string | undefined {
  return time === undefined ? undefined : time.toISOString();
}

/** A failed message as the failures page lists it; its content only when the service sent it (the role allows it). */
export function failureView(record: FailedMessage): Record<string, unknown> {
  return {
    id: record.id,
    workflow: record.workflow,
    workflowVersion: record.workflowVersion,
    component: record.component,
    kind: record.failure?.kind ?? '',
    error: record.failure?.message ?? '',
    retryable: record.failure?.retryable ?? false,
    attempts: record.attempts,
    firstFailed: iso(record.firstFailed),
    lastFailed: iso(record.lastFailed),
    messageId: record.messageId,
    contentKept: record.contentKept,
    ...(record.traceId ? { traceId: record.traceId } : {}),
    ...(record.failure === undefined ? {} : { failure: record.failure }),
    ...(record.message === undefined ? {} : { message: { id: record.message.id, body: record.message.body ?? {}, headers: record.message.headers } }),
  };
}

/** A time of a query string: ISO 8601 or ms since the epoch; 400 naming the parameter otherwise. */
export function timeParameter(params: URLSearchParams, name: string): Date | undefined {
  const text = params.get(name);
  if (text === null || text === '') return undefined;
  const time = /^\d+$/.test(text) ? new Date(Number(text)) : new Date(text);
  if (Number.isNaN(time.getTime()))
    throw new ApiError(400, `${name} must be an ISO 8601 time or milliseconds since the epoch, got ${JSON.stringify(text)}`, name);
  return time;
}

/** The filter of a failures query or action: the workflow is required. */
export function failureFilter(values: { workflow?: unknown; component?: unknown; kind?: unknown }, since?: Date, until?: Date): FailedMessageFilter {
  const field = (name: 'workflow' | 'component' | 'kind'): string => {
    const value = values[name];
    if (value === undefined || value === null) return '';
    if (typeof value !== 'string') throw new ApiError(400, `${name} must be a string`, name);
    return value;
  };
  const workflow = field('workflow');
  if (workflow === '') throw new ApiError(400, 'workflow is required: failed messages are kept per workflow', 'workflow');
  return { workflow, component: field('component'), kind: field('kind'), since, until };
}

/** GET /api/failures: one page of a workflow's failed messages and the counts by kind. */
export async function listFailures(loom: LoomCalls, params: URLSearchParams, token: string): Promise<Record<string, unknown>> {
  const filter = failureFilter(Object.fromEntries(params), timeParameter(params, 'since'), timeParameter(params, 'until'));
  const pageSize = params.get('pageSize');
  if (pageSize !== null && !/^\d{1,4}$/.test(pageSize)) throw new ApiError(400, 'pageSize must be an integer from 1 to 1000', 'pageSize');
  const page = await loom.unary(
    'executor',
    'listFailedMessages',
    { filter, pageSize: pageSize === null ? 100 : Number(pageSize), pageToken: params.get('pageToken') ?? '' },
    token,
  );
  return {
    failures: page.messages.map(failureView),
    total: Number(page.total),
    counts: Object.fromEntries(Object.entries(page.countsByKind).map(([kind, count]) => [kind, Number(count)])),
    ...(page.nextPageToken === '' ? {} : { nextPageToken: page.nextPageToken }),
  };
}

/** Audit actions by their short name (`WORKFLOW_START`). */
export function actionName(type: AuditEventType): string {
  return auditEventTypeToJSON(type).replace(/^AUDIT_EVENT_TYPE_/, '');
}

/** An audit event as the audit page shows it. */
export function auditEntry(event: AuditEvent): Record<string, unknown> {
  return {
    sequence: Number(event.sequence),
    time: iso(event.time),
    actor: event.actor,
    action: actionName(event.type),
    workflow: event.workflowName,
    ...(event.componentName ? { component: event.componentName } : {}),
    ...(event.reason ? { reason: event.reason } : {}),
    ...(Object.keys(event.attributes).length > 0 ? { attributes: event.attributes } : {}),
    hash: event.hash,
  };
}

/** The action names a query may filter on; 400 for one loom does not know. */
function actionTypes(params: URLSearchParams): AuditEventType[] {
  const text = params.get('action');
  if (text === null || text === '') return [];
  return text.split(',').map((name) => {
    const type = auditEventTypeFromJSON(`AUDIT_EVENT_TYPE_${name.trim().toUpperCase()}`);
    if (type === AuditEventType.UNRECOGNIZED || type === AuditEventType.AUDIT_EVENT_TYPE_UNSPECIFIED) {
      throw new ApiError(400, `action '${name}' is not an audit action (WORKFLOW_START, WORKFLOW_STOP, FAILED_MESSAGES_RETRIED, …)`, 'action');
    }
    return type;
  });
}

/** Entries a query answers at most: the newest. */
const MAX_AUDIT_ENTRIES = 500;

/**
 * GET /api/audit: entries by action, workflow and time from the audit service, by actor here (the service filters no
 * actor), newest first, at most MAX_AUDIT_ENTRIES.
 */
export async function queryAudit(loom: LoomCalls, params: URLSearchParams, token: string): Promise<Record<string, unknown>> {
  const types = actionTypes(params);
  const since = timeParameter(params, 'since');
  const until = timeParameter(params, 'until');
  const actor = params.get('actor') ?? '';
  const workflowName = params.get('workflow') ?? '';
  const entries: Record<string, unknown>[] = [];
  let pageToken = '';
  let scanned = 0;
  // the log is read oldest first; the newest entries that match are kept
  do {
    const page = await loom.unary('audit', 'query', { types, workflowName, since, until, pageSize: 1000, pageToken }, token);
    scanned += page.events.length;
    for (const event of page.events) if (actor === '' || event.actor === actor) entries.push(auditEntry(event));
    if (entries.length > MAX_AUDIT_ENTRIES) entries.splice(0, entries.length - MAX_AUDIT_ENTRIES);
    pageToken = page.nextPageToken;
  } while (pageToken !== '' && scanned < 100_000);
  return { entries: entries.reverse(), ...(pageToken === '' ? {} : { truncated: true }) };
}

/** POST /api/audit/verify. */
export async function verifyAudit(loom: LoomCalls, token: string): Promise<Record<string, unknown>> {
  const answer = await loom.unary('audit', 'verify', {}, token);
  return {
    ok: answer.ok,
    checked: Number(answer.eventsChecked),
    ...(answer.ok ? {} : { brokenAt: Number(answer.firstBrokenSequence), problem: answer.problem }),
  };
}

/** GET /api/skills: each registered skill with a health probe through the gateway (its circuit, latency). */
export async function listSkills(loom: LoomCalls, token: string): Promise<Record<string, unknown>> {
  const { skills } = await loom.unary('skill-gateway', 'listSkills', {}, token);
  const rows = await Promise.all(
    skills.map(async (skill) => {
      try {
        const check = await loom.unary('skill-gateway', 'checkSkill', { name: skill.name }, token);
        return {
          name: skill.name,
          url: skill.url,
          health: check.reachable ? 'reachable' : 'unreachable',
          circuit: circuitStateToJSON(check.circuitState).replace(/^CIRCUIT_STATE_/, ''),
          latencyMs: Number(check.latencyMs),
          inFlight: check.inFlight,
          maxConcurrency: check.maxConcurrency,
          ...(check.detail ? { detail: check.detail } : {}),
        };
      } catch (error) {
        // one skill's failed probe is shown on its row; the others still answer
        return { name: skill.name, url: skill.url, health: 'unknown', circuit: 'UNSPECIFIED', detail: error instanceof Error ? error.message : String(error) };
      }
    }),
  );
  return { skills: rows };
}

function scheduleView(status: ScheduleStatus): Record<string, unknown> {
  return {
    workflow: status.workflowName,
    cron: status.schedule?.cron ?? '',
    timezone: status.schedule?.timezone ?? '',
    enabled: status.schedule?.enabled ?? false,
    paused: status.paused,
    autoStart: status.autoStart,
    nextFire: iso(status.nextFireTime),
    lastFire: iso(status.lastFireTime),
    runState: stateName(status.runState),
    fires: status.fires === undefined ? undefined : Object.fromEntries(Object.entries(status.fires).map(([outcome, count]) => [outcome, Number(count)])),
    ...(status.lastError ? { lastError: status.lastError } : {}),
    ...(status.scheduleProblem ? { problem: status.scheduleProblem } : {}),
  };
}

/** GET /api/schedules. */
export async function listSchedules(loom: LoomCalls, token: string): Promise<Record<string, unknown>> {
  const answer = await loom.unary('scheduler', 'listSchedules', {}, token);
  return { schedules: answer.schedules.map(scheduleView) };
}
