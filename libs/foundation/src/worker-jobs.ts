import { parentPort } from 'node:worker_threads';

/** What a job threw in a worker, as it crosses to the pool: its name, message and primitive fields. */
export interface WorkerFailure {
  readonly name: string;
  readonly message: string;
  readonly details: Readonly<Record<string, string | number | boolean>>;
}

/** A worker's answer to job `id`. */
export type WorkerAnswer<Result> =
  { readonly id: number; readonly ok: true; readonly result: Result } | { readonly id: number; readonly ok: false; readonly error: WorkerFailure };

/** A job as the pool posts it. */
interface Posted<Job> {
  readonly id: number;
  readonly job: Job;
}

/** A worker module's serving function (`serveWorkerJobs`) was called on the main thread: a bug in the caller. */
export class NotInWorkerError extends Error {
  constructor(what = 'serveWorkerJobs', startedBy = 'a WorkerPool') {
    super(`${what} runs in a worker thread (started by ${startedBy})`);
    this.name = 'NotInWorkerError';
  }
}

/** What a worker posts once, when its module has loaded and it takes jobs. */
const READY = { ready: true } as const;

/** True for a worker's `ready` message. */
export function isReady(message: unknown): boolean {
  return typeof message === 'object' && message !== null && (message as { ready?: unknown }).ready === true;
}

/**
 * The worker side of a WorkerPool: answers each posted job with `handle`'s result, or with what it threw.
 * Call it once from the worker's module.
 */
export function serveWorkerJobs<Job, Result>(handle: (job: Job) => Result | Promise<Result>): void {
  const port = parentPort;
  if (port === null) throw new NotInWorkerError();
  port.on('message', (posted: Posted<Job>) => {
    void (async () => {
      let answer: WorkerAnswer<Result>;
      try {
        answer = { id: posted.id, ok: true, result: await handle(posted.job) };
      } catch (error) {
        answer = { id: posted.id, ok: false, error: failureOf(error) };
      }
      port.postMessage(answer);
    })();
  });
  port.postMessage(READY);
}

function failureOf(error: unknown): WorkerFailure {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error), details: {} };
  const details: Record<string, string | number | boolean> = {};
  for (const [key, value] of Object.entries(error)) {
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') details[key] = value;
  }
  return { name: error.name, message: error.message, details };
}
