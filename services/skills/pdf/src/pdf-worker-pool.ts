import { WorkerJobError, WorkerPool } from '@loom/foundation';

const WORKER_ENTRY = new URL('../worker/pdf-worker.mjs', import.meta.url);

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
    options: { cause?: unknown } = {},
  ) {
    super(message, options);
    this.name = 'PdfParseError';
  }
}

interface PdfJob {
  readonly bytes: ArrayBuffer;
  readonly maxPages: number;
}

/**
 * pdf.js in worker threads (the shared WorkerPool). A document that passes its time limit, exhausts its worker's
 * heap or crashes it costs only that worker, which is replaced for the next document.
 */
export class PdfWorkerPool {
  private readonly pool: WorkerPool<PdfJob, ParsedPdf>;

  constructor(
    size: number,
    private readonly limits: PdfLimits,
  ) {
    this.pool = new WorkerPool({ name: 'PDF parsing', entry: WORKER_ENTRY, size, jobTimeMs: limits.parseTimeMs, workerMemoryMb: limits.workerMemoryMb });
  }

  /** Parses a PDF; rejects with PdfParseError, or with the signal's reason when it aborts first. */
  async parse(bytes: Buffer, signal: AbortSignal): Promise<ParsedPdf> {
    // a copy of the bytes moves to the worker; the request keeps its own
    const copy = new Uint8Array(bytes).buffer;
    try {
      return await this.pool.run({ bytes: copy, maxPages: this.limits.maxPages }, signal, [copy]);
    } catch (error) {
      throw error instanceof WorkerJobError ? this.parseErrorOf(error) : error;
    }
  }

  /** Ends every worker; parses under way fail. Idempotent. */
  close(): Promise<void> {
    return this.pool.close();
  }

  /** Workers alive now. */
  get workers(): number {
    return this.pool.workers;
  }

  private parseErrorOf(error: WorkerJobError): PdfParseError {
    switch (error.reason) {
      case 'closed':
        return new PdfParseError('closed', 'the PDF service is stopping', { cause: error });
      case 'timed_out':
        return new PdfParseError('too_complex', `the PDF took longer than ${this.limits.parseTimeMs} ms to parse`, { cause: error });
      case 'crashed':
        return new PdfParseError('too_complex', `the PDF exhausted the parser (over ${this.limits.workerMemoryMb} MB or a crash)`, { cause: error });
      case 'failed':
        if (error.errorName === 'PasswordException') return new PdfParseError('encrypted', 'the PDF is encrypted and needs a password', { cause: error });
        if (error.errorName === 'TooManyPagesError') return new PdfParseError('too_many_pages', error.message, { cause: error });
        return new PdfParseError('malformed', `the PDF could not be read: ${error.message}`, { cause: error });
    }
  }
}
