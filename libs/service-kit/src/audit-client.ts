import { status } from '@grpc/grpc-js';
import { type AppendResponse, type AuditClient, type AuditEvent } from '@loom/contracts';
import { FailedPreconditionError } from '@loom/domain';
import { call, type UnaryCallOptions } from './client.js';
import { isServiceError } from './errors.js';

/** An audit event that had to be written first was not: the action it records must not go ahead. */
export class AuditRequiredError extends FailedPreconditionError {
  constructor(
    readonly eventType: string,
    reason: string,
    options?: { cause?: unknown },
  ) {
    super(`the audit event ${eventType} could not be written (${reason}); the action it records is refused`, options);
  }
}

/** The fields of an audit event a caller sets; the audit service assigns sequence, time and hashes. */
export type AuditEventInput = Pick<AuditEvent, 'type'> & Partial<Omit<AuditEvent, 'type' | 'sequence' | 'time' | 'prevHash' | 'hash'>>;

/**
 * Appends an audit event and resolves once it is on disk; fails closed. Any failure (the audit service down, a
 * deadline, a refusal) becomes an AuditRequiredError, so a caller writes
 * `await appendRequired(audit, event); startTheScript();` and the script never starts unaudited.
 */
export async function appendRequired(client: AuditClient, event: AuditEventInput, options: UnaryCallOptions = {}): Promise<AppendResponse> {
  try {
    return await call(client, 'append', { event: auditEvent(event) }, options);
  } catch (error) {
    const reason = isServiceError(error) ? `${status[error.code]}: ${error.details}` : String(error);
    throw new AuditRequiredError(String(event.type), reason, { cause: error });
  }
}

/** A whole AuditEvent message from the fields a caller sets, every other one empty. */
export function auditEvent(event: AuditEventInput): AuditEvent {
  return {
    sequence: 0,
    time: undefined,
    workflowName: '',
    componentName: '',
    componentType: '',
    reason: '',
    actor: '',
    traceId: '',
    prevHash: '',
    hash: '',
    attributes: {},
    ...event,
  };
}
