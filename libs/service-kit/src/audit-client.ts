import { status } from '@grpc/grpc-js';
import { type AppendResponse, type AuditClient, type AuditEvent, AuditEventType } from '@loom/contracts';
import { UnavailableError } from '@loom/domain';
import { call, type UnaryCallOptions } from './client.js';
import { isServiceError } from './errors.js';

/**
 * An audit event that had to be written first was not: the action it records must not go ahead. UNAVAILABLE: nothing
 * was done, and the same call may succeed once the audit log takes events again.
 */
export class AuditRequiredError extends UnavailableError {
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
export async function appendRequired(writer: AuditClient | AuditAppender, event: AuditEventInput, options: UnaryCallOptions = {}): Promise<AppendResponse> {
  try {
    return writer instanceof AuditAppender ? await writer.append(event) : await call(writer, 'append', { event: auditEvent(event) }, options);
  } catch (error) {
    const reason = isServiceError(error) ? `${status[error.code]}: ${error.details}` : String(error);
    throw new AuditRequiredError(AuditEventType[event.type].replace(/^AUDIT_EVENT_TYPE_/, ''), reason, { cause: error });
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

/** How an AuditAppender batches. */
export interface AuditAppenderOptions {
  /** Most events in one AppendBatch call (the service takes at most 1,000). */
  readonly maxBatch?: number;
  /** Most AppendBatch calls outstanding at once. */
  readonly maxInFlight?: number;
  /** Deadline of each call. */
  readonly deadlineMs?: number;
}

interface QueuedEvent {
  readonly event: AuditEvent;
  resolve(ack: AppendResponse): void;
  reject(error: unknown): void;
}

/**
 * Gathers one process's concurrent audit appends into AppendBatch calls. An append is sent at once when fewer than
 * `maxInFlight` calls are outstanding; otherwise it waits for one to return and leaves with everything that queued up
 * meanwhile, so batches grow with load and a lone append pays no wait. Each append resolves with its own
 * acknowledgement once its event is on disk. A batch refused as invalid is re-sent event by event, so one caller's bad
 * event never fails another caller's append.
 */
export class AuditAppender {
  private readonly maxBatch: number;
  private readonly maxInFlight: number;
  private readonly callOptions: UnaryCallOptions;
  private queue: QueuedEvent[] = [];
  private inFlight = 0;
  /** Waiting in `settled` for every append made so far to be answered. */
  private readonly idle: (() => void)[] = [];

  constructor(
    private readonly client: AuditClient,
    options: AuditAppenderOptions = {},
  ) {
    this.maxBatch = options.maxBatch ?? 500;
    this.maxInFlight = options.maxInFlight ?? 1;
    this.callOptions = options.deadlineMs === undefined ? {} : { deadlineMs: options.deadlineMs };
  }

  /** Appends an event; resolves with its sequence number and hash once it is on disk. */
  append(event: AuditEventInput): Promise<AppendResponse> {
    return new Promise((resolve, reject) => {
      this.queue.push({ event: auditEvent(event), resolve, reject });
      this.send();
    });
  }

  /**
   * Resolves once every append made so far has been answered (written or refused): a service stopping waits for its
   * last events before the audit service it calls goes away.
   */
  settled(): Promise<void> {
    if (this.inFlight === 0 && this.queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  private send(): void {
    while (this.inFlight < this.maxInFlight && this.queue.length > 0) {
      const batch = this.queue.splice(0, this.maxBatch);
      this.inFlight++;
      void this.deliver(batch).finally(() => {
        this.inFlight--;
        this.send();
        if (this.inFlight === 0 && this.queue.length === 0) for (const resolve of this.idle.splice(0)) resolve();
      });
    }
  }

  private async deliver(batch: readonly QueuedEvent[]): Promise<void> {
    try {
      const { acks } = await call(this.client, 'appendBatch', { events: batch.map((entry) => entry.event) }, this.callOptions);
      if (acks.length !== batch.length) {
        throw new UnavailableError(`the audit service acknowledged ${acks.length} of ${batch.length} events`);
      }
      batch.forEach((entry, index) => entry.resolve(acks[index] as AppendResponse));
    } catch (error) {
      if (batch.length > 1 && isServiceError(error) && error.code === status.INVALID_ARGUMENT) {
        const alone = (entry: QueuedEvent): Promise<void> =>
          call(this.client, 'append', { event: entry.event }, this.callOptions).then(
            (ack) => entry.resolve(ack),
            (refusal: unknown) => entry.reject(refusal),
          );
        await Promise.all(batch.map(alone));
        return;
      }
      for (const entry of batch) entry.reject(error);
    }
  }
}
