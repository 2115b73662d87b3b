import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';

const WORKER_ENTRY = fileURLToPath(new URL('../worker/pdf-worker.mjs', import.meta.url));

/** What a worker found in a PDF. */
export interface ParsedPdf {
  readonly pages: ReadonlyArray<{ readonly number: number; readonly text: string }>;
  /** The document information dictionary as pdf.js reads it (Title, Author, CreationDate, PDFFormatVersion, …). */
  readonly info: Readonly<Record<string, string | number | boolean>>;
}

/** Limits of one parse. */
export interface PdfLimits {
  readonly maxPages: number;
  /** Time one document may take in a worker before the worker is ended. */
  readonly parseTimeMs: number;
  /** Heap of a worker thread. */
  readonly workerMemoryMb: number;
}

/** pdf.js refused the document, or a limit ended its parse. `kind` says which. */
export class PdfParseError extends Error {
  constructor(
    readonly kind: 'encrypted' | 'malformed' | 'too_many_pages' | 'too_complex' | 'closed',
    message: string,
  ) {
    super(message);
    this.name = 'PdfParseError';
  }
}

interface Answer {
  id: number;
  ok: boolean;
  result?: ParsedPdf;
  error?: { name: string; code?: number; message: string };
}

interface Slot {
  worker: Worker;
  busy: boolean;
}

/**
 * A few worker threads running pdf.js. A document that passes its time limit, exhausts its
 * worker's heap or crashes it costs only that worker, which is replaced for the next document.
 */
export class PdfWorkerPool {
  private readonly slots: Slot[] = [];
  private readonly waiting: Array<() => void> = [];
  private nextId = 0;
  private closed = false;

  constructor(
    private readonly size: number,
    private readonly limits: PdfLimits,
  ) {}

  /** Parses a PDF; rejects with PdfParseError, or with the signal's reason when it aborts first. */
  async parse(bytes: Buffer, signal: AbortSignal): Promise<ParsedPdf> {
    const slot = await this.acquire(signal);
    const id = (this.nextId += 1);
    // a copy of the bytes moves to the worker; the request keeps its own
    const copy = new Uint8Array(bytes).buffer;
    return new Promise<ParsedPdf>((resolve, reject) => {
      let settled = false;
      const finish = (outcome: () => void, keepWorker: boolean): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        slot.worker.off('message', onMessage);
        slot.worker.off('error', onCrash);
        slot.worker.off('exit', onCrash);
        if (keepWorker) this.release(slot);
        else this.discard(slot);
        outcome();
      };
      const onMessage = (answer: Answer): void => {
        if (answer.id !== id) return;
        if (answer.ok && answer.result !== undefined) {
          const result = answer.result;
          finish(() => resolve(result), true);
        } else {
          finish(() => reject(toParseError(answer.error)), true);
        }
      };
      const onCrash = (): void =>
        finish(() => reject(new PdfParseError('too_complex', `the PDF exhausted the parser (over ${this.limits.workerMemoryMb} MB or a crash)`)), false);
      const onAbort = (): void => finish(() => reject(signal.reason as Error), false);
      const timer = setTimeout(
        () => finish(() => reject(new PdfParseError('too_complex', `the PDF took longer than ${this.limits.parseTimeMs} ms to parse`)), false),
        this.limits.parseTimeMs,
      );
      slot.worker.on('message', onMessage);
      slot.worker.once('error', onCrash);
      slot.worker.once('exit', onCrash);
      signal.addEventListener('abort', onAbort, { once: true });
      slot.worker.postMessage({ id, bytes: copy, maxPages: this.limits.maxPages }, [copy]);
    });
  }

  /** Ends every worker; parses under way fail. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    for (const wake of this.waiting.splice(0)) wake();
    await Promise.all(this.slots.splice(0).map((slot) => slot.worker.terminate()));
  }

  /** Workers alive now. */
  get workers(): number {
    return this.slots.length;
  }

  private async acquire(signal: AbortSignal): Promise<Slot> {
    for (;;) {
      if (this.closed) throw new PdfParseError('closed', 'the PDF service is stopping');
      signal.throwIfAborted();
      const idle = this.slots.find((slot) => !slot.busy);
      if (idle !== undefined) {
        idle.busy = true;
        return idle;
      }
      if (this.slots.length < this.size) {
        const slot: Slot = { worker: this.spawn(), busy: true };
        this.slots.push(slot);
        return slot;
      }
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
  }

  private spawn(): Worker {
    const worker = new Worker(WORKER_ENTRY, { resourceLimits: { maxOldGenerationSizeMb: this.limits.workerMemoryMb, stackSizeMb: 4 } });
    // a worker that dies while idle is dropped; one that dies mid-parse is handled by that parse
    worker.on('error', () => undefined);
    worker.once('exit', () => {
      const index = this.slots.findIndex((slot) => slot.worker === worker);
      if (index >= 0 && this.slots[index]?.busy === false) this.slots.splice(index, 1);
    });
    return worker;
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

function toParseError(error: Answer['error']): PdfParseError {
  const name = error?.name ?? 'Error';
  const message = error?.message ?? 'unknown failure';
  if (name === 'PasswordException') return new PdfParseError('encrypted', 'the PDF is encrypted and needs a password');
  if (name === 'TooManyPagesError') return new PdfParseError('too_many_pages', message);
  return new PdfParseError('malformed', `the PDF could not be read: ${message}`);
}
