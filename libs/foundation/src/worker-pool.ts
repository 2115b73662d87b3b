import { type TransferListItem, Worker } from 'node:worker_threads';
import { type ErrorKind, LoomError } from './errors.js';
import { Lifecycle, type TransitionTable } from './lifecycle.js';
import { ShutdownOnce } from './shutdown-once.js';
import { isReady, type WorkerAnswer, type WorkerFailure } from './worker-jobs.js';

/** Why a job of a worker pool failed. */
export type WorkerJobFailureReason =
  /** The job's own code threw in the worker; `errorName` and `details` say what it threw. */
  | 'failed'
  /** The worker died during the job (a crash, its heap exhausted). */
  | 'crashed'
  /** The job passed the pool's time per job and its worker was ended. */
  | 'timed_out'
  /** The pool is closing or closed. */
  | 'closed';

// the caller's kind of each reason; a crash is most often a heap the job exhausted, and would exhaust a fresh worker
// again, so it is not retryable though its kind is
const FAILURE_KINDS: Readonly<Record<WorkerJobFailureReason, { kind: ErrorKind; retryable?: boolean }>> = {
  failed: { kind: 'invalid-argument' },
  crashed: { kind: 'resource-exhausted', retryable: false },
  timed_out: { kind: 'deadline-exceeded' },
  closed: { kind: 'unavailable' },
};

/** A job of a worker pool failed; `reason` says how. Only `closed` is worth another try elsewhere. */
export class WorkerJobError extends LoomError {
  readonly kind: ErrorKind;
  /** The name of what the job threw in the worker (`failed` only), e.g. `PasswordException`. */
  readonly errorName: string | undefined;
  /** The primitive fields of what the job threw (`code`, `field`, …), `failed` only. */
  readonly details: Readonly<Record<string, string | number | boolean>>;

  constructor(
    readonly reason: WorkerJobFailureReason,
    message: string,
    options: { cause?: unknown; failure?: WorkerFailure } = {},
  ) {
    const { kind, retryable } = FAILURE_KINDS[reason];
    super(message, options.cause === undefined ? { retryable } : { cause: options.cause, retryable });
    this.kind = kind;
    this.errorName = options.failure?.name;
    this.details = options.failure?.details ?? {};
  }
}

/** How a worker pool runs its threads. */
export interface WorkerPoolOptions {
  /** What the workers do, for messages: `annotation`, `PDF parsing`. */
  readonly name: string;
  /** The worker's module: built JavaScript that calls `serveWorkerJobs` (`@loom/foundation/worker`). */
  readonly entry: URL;
  /** Most threads at once; they start when work needs them and stay until the pool closes. */
  readonly size: number;
  /** Time one job may take before its worker is ended (absent: no limit but the caller's signal). */
  readonly jobTimeMs?: number;
  /** Old-generation heap of each worker thread. */
  readonly workerMemoryMb?: number;
  /** Given to every worker as `workerData`. */
  readonly workerData?: unknown;
}

/** The lifecycle of a worker pool. */
export type WorkerPoolState = 'open' | 'closing' | 'closed';

const TRANSITIONS: TransitionTable<WorkerPoolState> = { open: ['closing'], closing: ['closed'], closed: [] };

/**
 * The Node options of a worker thread (a pool's, or any other loom starts): the process's (inherited), except where
 * the process resolves packages with export conditions: a test runner resolves workspace packages to their TypeScript
 * sources (`--conditions @loom/source`), which a worker thread cannot load, so there workers start with no options
 * and run the build. (An explicit list is checked: the process-wide `--no-node-snapshot` in it would be refused.)
 */
export const WORKER_EXEC_ARGV: readonly string[] | undefined = process.execArgv.some((argument) => /^(--conditions|-C)(=|$)/.test(argument)) ? [] : undefined;

interface Slot {
  readonly worker: Worker;
  /** Settles once the worker's module has loaded (its `ready`), or it died first; a job's time starts there. */
  readonly ready: Promise<void>;
  busy: boolean;
}

/**
 * Worker threads that run jobs off the event loop, one job per worker at a time, queued in order when
 * all are busy. A job that crashes its worker, passes its time or is aborted costs only that worker,
 * which is ended and replaced for the next job.
 */
export class WorkerPool<Job, Result> {
  private readonly lifecycle: Lifecycle<WorkerPoolState>;
  private readonly slots: Slot[] = [];
  private readonly waiting: Array<() => void> = [];
  private readonly closeOnce = new ShutdownOnce(() => this.shutdown());
  private nextId = 0;

  constructor(private readonly options: WorkerPoolOptions) {
    if (!Number.isInteger(options.size) || options.size < 1)
      throw new RangeError(`${options.name} worker pool: size must be a positive integer, got ${options.size}`);
    this.lifecycle = new Lifecycle(`${options.name} worker pool`, TRANSITIONS, 'open');
  }

  /** The pool's state. */
  get state(): WorkerPoolState {
    return this.lifecycle.state;
  }

  /** Threads alive now. */
  get workers(): number {
    return this.slots.length;
  }

  /** Most threads at once. */
  get size(): number {
    return this.options.size;
  }

  /**
   * Runs a job in a free worker (waiting for one when all are busy); resolves with its result, rejects with
   * WorkerJobError, or with the signal's reason when it aborts first. `transfer` moves buffers instead of copying.
   */
  async run(job: Job, signal: AbortSignal, transfer: readonly TransferListItem[] = []): Promise<Result> {
    const slot = await this.acquire(signal);
    if (signal.aborted) {
      this.release(slot);
      throw signal.reason as Error;
    }
    const id = (this.nextId += 1);
    return new Promise<Result>((resolve, reject) => {
      let settled = false;
      const finish = (outcome: () => void, keepWorker: boolean): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        slot.worker.off('message', onMessage);
        slot.worker.off('error', onError);
        slot.worker.off('exit', onExit);
        if (keepWorker) this.release(slot);
        else this.discard(slot);
        outcome();
      };
      const onMessage = (answer: WorkerAnswer<Result>): void => {
        if (answer.id !== id) return;
        if (answer.ok) finish(() => resolve(answer.result), true);
        else finish(() => reject(new WorkerJobError('failed', answer.error.message, { failure: answer.error })), true);
      };
      const crashed = (cause: unknown): void =>
        finish(
          () =>
            reject(
              this.lifecycle.is('open')
                ? new WorkerJobError('crashed', `the ${this.options.name} worker died during the job`, { cause })
                : new WorkerJobError('closed', `the ${this.options.name} workers are stopping`, { cause }),
            ),
          false,
        );
      const onError = (error: Error): void => crashed(error);
      const onExit = (code: number): void => crashed(new Error(`worker exited with code ${code}`));
      const onAbort = (): void => finish(() => reject(signal.reason as Error), false);
      const limit = this.options.jobTimeMs;
      let timer: NodeJS.Timeout | undefined;
      // a new worker's start (loading its module, models) is not the job's time
      if (limit !== undefined) {
        void slot.ready.then(() => {
          if (settled) return;
          timer = setTimeout(
            () => finish(() => reject(new WorkerJobError('timed_out', `the ${this.options.name} job took longer than ${limit} ms`)), false),
            limit,
          );
        });
      }
      slot.worker.on('message', onMessage);
      slot.worker.once('error', onError);
      slot.worker.once('exit', onExit);
      signal.addEventListener('abort', onAbort, { once: true });
      slot.worker.postMessage({ id, job }, [...transfer]);
    });
  }

  /** Ends every worker; jobs under way and waiting fail with WorkerJobError, reason `closed`. A second call waits for the first. */
  close(): Promise<void> {
    return this.closeOnce.call();
  }

  private async shutdown(): Promise<void> {
    this.lifecycle.to('closing');
    for (const wake of this.waiting.splice(0)) wake();
    // terminating a busy worker fires its job's exit handler, which settles the job as closed (the state says so)
    await Promise.all(this.slots.splice(0).map((slot) => slot.worker.terminate()));
    this.lifecycle.to('closed');
  }

  private async acquire(signal: AbortSignal): Promise<Slot> {
    for (;;) {
      if (!this.lifecycle.is('open')) throw new WorkerJobError('closed', `the ${this.options.name} workers are stopping`);
      signal.throwIfAborted();
      const idle = this.slots.find((slot) => !slot.busy);
      if (idle !== undefined) {
        idle.busy = true;
        return idle;
      }
      if (this.slots.length < this.options.size) {
        const slot = this.spawn();
        this.slots.push(slot);
        return slot;
      }
      await this.waitForSlot(signal);
    }
  }

  /** Waits until a worker is released, replaced or the pool closes; an abort stops the wait. */
  private waitForSlot(signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      const wake = (): void => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = (): void => {
        const index = this.waiting.indexOf(wake);
        if (index >= 0) this.waiting.splice(index, 1);
        resolve();
      };
      this.waiting.push(wake);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  private spawn(): Slot {
    const { workerMemoryMb, workerData } = this.options;
    const worker = new Worker(this.options.entry, {
      ...(WORKER_EXEC_ARGV === undefined ? {} : { execArgv: [...WORKER_EXEC_ARGV] }),
      ...(workerData === undefined ? {} : { workerData }),
      ...(workerMemoryMb === undefined ? {} : { resourceLimits: { maxOldGenerationSizeMb: workerMemoryMb, stackSizeMb: 4 } }),
    });
    const ready = new Promise<void>((resolve) => {
      const onReady = (message: unknown): void => {
        if (!isReady(message)) return;
        worker.off('message', onReady);
        resolve();
      };
      worker.on('message', onReady);
      // a worker that dies first settles too: its job hears of the death itself
      worker.once('exit', () => resolve());
    });
    // a worker that dies while idle is dropped; one that dies during a job is handled by that job
    worker.on('error', () => undefined);
    worker.once('exit', () => {
      const index = this.slots.findIndex((slot) => slot.worker === worker);
      if (index >= 0 && this.slots[index]?.busy === false) this.slots.splice(index, 1);
    });
    return { worker, ready, busy: true };
  }

  private release(slot: Slot): void {
    slot.busy = false;
    this.waiting.shift()?.();
  }

  private discard(slot: Slot): void {
    const index = this.slots.indexOf(slot);
    if (index >= 0) this.slots.splice(index, 1);
    void slot.worker.terminate();
    this.waiting.shift()?.();
  }
}
