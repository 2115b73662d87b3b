import { status } from '@grpc/grpc-js';
import { type WatchWorkflowsResponse, type Workflow, WorkflowEventType, type WorkflowStoreClient } from '@loom/contracts';
import { COMPONENT_KINDS, type Schedule } from '@loom/domain';
import { scheduleFromProto } from '@loom/domain/proto';
import { KeyedLock, restartDelayMs } from '@loom/foundation';
import { call, isServiceError } from '@loom/service-kit';
import { type Logger } from '@loom/telemetry';
import { type Clock } from '@loom/foundation';
import { describeError } from './executor-port.js';

/** A stored workflow as the scheduler sees it in the config store's change stream. */
export interface WorkflowEntry {
  /** Stored name `<workflow_name>_<uuid>`. */
  readonly name: string;
  readonly version: number;
  readonly autoStart: boolean;
  readonly valid: boolean;
  readonly invalidReason: string;
  /** The first inlet source component, which an ALLOW fire of a running workflow sends its trigger message to. */
  readonly inlet: string | undefined;
}

/** What the feed tells the scheduler. */
export interface WorkflowFeedHandlers {
  /** A workflow as stored now: from a snapshot (`initial`) or a put. */
  workflow(entry: WorkflowEntry, initial: boolean): void;
  deleted(name: string): void;
  /** The snapshot of a (re)connected stream is complete: `names` are every stored workflow. */
  snapshotComplete(names: ReadonlySet<string>): void;
  /** The workflow's schedule as the config store has it: none, or one with a problem (its file is invalid). */
  schedule(name: string, schedule: Schedule | undefined, problem: string): void;
}

/** Reconnect and GetSchedule retry delays: 100 ms doubling to 5 s. */
const RETRY = { initialDelayMs: 100, maxDelayMs: 5000 };
const SCHEDULE_DEADLINE_MS = 10_000;
/** GetSchedule calls in flight at once: a snapshot of thousands of workflows asks in turn, not all together. */
const LOOKUP_CONCURRENCY = 16;

function inletOf(workflow: Workflow | undefined): string | undefined {
  return workflow?.components.find((component) => component.component?.qualifiedName === COMPONENT_KINDS.INLET)?.name;
}

/**
 * Follows the config store's WatchWorkflows stream, reconnecting with backoff when it breaks (each connection starts
 * with a fresh snapshot), and looks up the schedule of every workflow that is put: the stream carries configurations,
 * not schedules, and the scheduler never reads the config store's files itself.
 */
export class WorkflowFeed {
  private readonly controller = new AbortController();
  private readonly lookups = new KeyedLock();
  private readonly pendingLookup = new Set<string>();
  private lookupsInFlight = 0;
  private readonly lookupTurns: (() => void)[] = [];
  private running: Promise<void> | undefined;

  constructor(
    private readonly store: () => WorkflowStoreClient,
    private readonly handlers: WorkflowFeedHandlers,
    private readonly logger: Logger,
    private readonly clock: Clock,
  ) {}

  start(): void {
    this.running ??= this.follow();
  }

  private async follow(): Promise<void> {
    let failures = 0;
    while (!this.controller.signal.aborted) {
      const connectedAt = Date.now();
      try {
        await this.watchOnce();
        if (this.controller.signal.aborted) return;
        this.logger.warn('config store ended the workflow stream; watching again');
      } catch (error) {
        if (this.controller.signal.aborted) return;
        this.logger.warn({ error: describeError(error) }, 'workflow stream from the config store failed; watching again');
      }
      // a stream that lived a while was healthy: the next failure starts the backoff afresh
      failures = Date.now() - connectedAt > RETRY.maxDelayMs ? 1 : failures + 1;
      const delay = restartDelayMs(RETRY, failures);
      await this.clock.sleepUntil(new Date(this.clock.now().getTime() + delay), this.controller.signal);
    }
  }

  private watchOnce(): Promise<void> {
    return new Promise((resolve, reject) => {
      const stream = this.store().watchWorkflows({});
      const names = new Set<string>();
      let initial = true;
      const abort = (): void => stream.cancel();
      this.controller.signal.addEventListener('abort', abort, { once: true });
      stream.on('data', (event: WatchWorkflowsResponse) => {
        if (event.type === WorkflowEventType.WORKFLOW_EVENT_TYPE_SNAPSHOT_COMPLETE) {
          initial = false;
          this.handlers.snapshotComplete(names);
          return;
        }
        const summary = event.summary;
        if (summary === undefined) return;
        if (event.type === WorkflowEventType.WORKFLOW_EVENT_TYPE_DELETE) {
          names.delete(summary.name);
          this.handlers.deleted(summary.name);
          return;
        }
        names.add(summary.name);
        this.handlers.workflow(
          {
            name: summary.name,
            version: summary.version,
            autoStart: summary.autoStart,
            valid: summary.valid,
            invalidReason: summary.invalidReason,
            inlet: inletOf(event.workflow),
          },
          initial,
        );
        this.lookUpSchedule(summary.name);
      });
      stream.on('error', (error: Error) => {
        this.controller.signal.removeEventListener('abort', abort);
        if (isServiceError(error) && error.code === status.CANCELLED && this.controller.signal.aborted) resolve();
        else reject(error);
      });
      stream.on('end', () => {
        this.controller.signal.removeEventListener('abort', abort);
        resolve();
      });
    });
  }

  /** Reads a workflow's schedule; a put while a lookup runs reads it once more afterwards. */
  private lookUpSchedule(name: string): void {
    if (this.pendingLookup.has(name)) return;
    this.pendingLookup.add(name);
    this.lookups
      .run(name, async () => {
        await this.turn();
        try {
          this.pendingLookup.delete(name);
          await this.readSchedule(name);
        } finally {
          // the place passes to the next waiting lookup, if any
          const next = this.lookupTurns.shift();
          if (next === undefined) this.lookupsInFlight--;
          else next();
        }
      })
      .catch((error: unknown) => this.logger.error({ workflow: name, error: describeError(error) }, 'reading a schedule failed'));
  }

  /** Resolves when fewer than LOOKUP_CONCURRENCY lookups run; the caller then holds a place until it is done. */
  private async turn(): Promise<void> {
    if (this.lookupsInFlight < LOOKUP_CONCURRENCY) this.lookupsInFlight++;
    else await new Promise<void>((resolve) => this.lookupTurns.push(resolve));
  }

  private async readSchedule(name: string): Promise<void> {
    for (let attempt = 1; !this.controller.signal.aborted; attempt++) {
      try {
        const { schedule } = await call(this.store(), 'getSchedule', { workflowName: name }, { deadlineMs: SCHEDULE_DEADLINE_MS });
        this.handlers.schedule(name, schedule === undefined ? undefined : scheduleFromProto(schedule), '');
        return;
      } catch (error) {
        if (isServiceError(error) && error.code === status.NOT_FOUND) {
          // no schedule, or the workflow was deleted meanwhile (its delete event follows)
          this.handlers.schedule(name, undefined, '');
          return;
        }
        if (isServiceError(error) && (error.code === status.FAILED_PRECONDITION || error.code === status.INVALID_ARGUMENT)) {
          this.handlers.schedule(name, undefined, error.details);
          return;
        }
        const delay = restartDelayMs(RETRY, attempt);
        this.logger.warn({ workflow: name, error: describeError(error), retryInMs: delay }, 'cannot read the schedule of a workflow; trying again');
        await this.clock.sleepUntil(new Date(this.clock.now().getTime() + delay), this.controller.signal);
      }
    }
  }

  async close(): Promise<void> {
    this.controller.abort();
    await this.running;
  }
}
