import {
  AddressPolicy,
  PayloadTooLargeError,
  safeFetch,
  ServiceBusyError,
  type SkillDefinition,
  type SkillModule,
  UnprocessableError,
} from '@loom/skill-service-kit';
import { pdfDate } from './pdf-date.js';
import { type ParsedPdf, PdfParseError, PdfWorkerPool } from './pdf-worker-pool.js';

/** Pages read at most from one document; more is refused as too large. */
export const MAX_PAGES = 2000;
/** Heap of each pdf.js worker thread. */
export const WORKER_MEMORY_MB = 512;

const PDF_TYPES = ['application/pdf', 'application/octet-stream'];

const RESPONSE_SCHEMA = {
  type: 'object',
  required: ['text', 'pages', 'metadata'],
  properties: {
    text: { type: 'string', description: 'the text of every page, pages separated by blank lines' },
    pages: { type: 'array', items: { type: 'object', properties: { number: { type: 'integer' }, text: { type: 'string' } } } },
    metadata: {
      type: 'object',
      properties: {
        title: { type: 'string', nullable: true },
        author: { type: 'string', nullable: true },
        subject: { type: 'string', nullable: true },
        keywords: { type: 'string', nullable: true },
        creator: { type: 'string', nullable: true },
        producer: { type: 'string', nullable: true },
        creationDate: { type: 'string', nullable: true, description: 'ISO 8601 in UTC' },
        modificationDate: { type: 'string', nullable: true },
        pdfVersion: { type: 'string', nullable: true },
        pageCount: { type: 'integer' },
      },
    },
  },
};

/** Limits of the PDF skill that are not settings of every skill. */
export interface PdfSkillOptions {
  readonly maxPages?: number;
  readonly workerMemoryMb?: number;
}

/** The PDF parsing skill: `POST /parse` with PDF bytes, or JSON `{url}` → `{text, pages, metadata}`. */
export const pdfSkill: SkillModule = createPdfSkill();

/** The PDF parsing skill with its own page and memory limits. */
export function createPdfSkill(options: PdfSkillOptions = {}): SkillModule {
  const maxPages = options.maxPages ?? MAX_PAGES;
  return {
    name: 'pdf',
    defaultPort: 8089,
    hostPort: 8089,
    registrationPath: '/parse',
    capability: 'PDF_PARSING',
    create({ settings }): Promise<SkillDefinition> {
      const policy = new AddressPolicy(settings.fetchAllowHosts);
      const pool = new PdfWorkerPool(Math.max(1, Math.min(settings.limits.concurrency, settings.workers)), {
        maxPages,
        // a document too heavy to parse is the document's fault (422), not a busy service (503): it ends before the request's limit
        parseTimeMs: Math.max(100, Math.floor(settings.limits.timeLimitMs * 0.9)),
        workerMemoryMb: options.workerMemoryMb ?? WORKER_MEMORY_MB,
      });
      return Promise.resolve({
        name: 'pdf',
        title: 'loom PDF parsing',
        description: 'Extracts the text of each page and the document information of a PDF with pdf.js, in worker threads with page, time and memory limits.',
        version: '0.1.0',
        routes: [
          {
            method: 'POST',
            path: '/parse',
            summary: 'Extract text per page and metadata from a PDF',
            description:
              'Send the PDF bytes as application/pdf (or application/octet-stream), or JSON {url} to have the skill fetch it under the same address rules as web data.',
            consumes: [...PDF_TYPES, 'application/json'],
            body: {
              type: 'object',
              required: ['url'],
              additionalProperties: false,
              properties: { url: { type: 'string', minLength: 1, maxLength: 8192 } },
            },
            response: RESPONSE_SCHEMA,
            errors: [422],
            async handler(request) {
              let bytes: Buffer;
              let field: string | undefined;
              if (request.mediaType === 'application/json') {
                field = 'url';
                const { url } = request.body as { url: string };
                const limits = { ...settings.fetchLimits, maxBytes: Math.min(settings.fetchLimits.maxBytes, settings.limits.bodyLimitBytes) };
                bytes = (await safeFetch(url, { policy, limits, accept: PDF_TYPES, field, signal: request.signal })).body;
              } else {
                bytes = request.body as Buffer;
              }
              if (!isPdf(bytes)) throw new UnprocessableError('not_a_pdf', 'the document is not a PDF (no %PDF- header)', field === undefined ? {} : { field });
              request.span.setAttribute('loom.pdf.bytes', bytes.length);
              const parsed = await parse(pool, bytes, request.signal, field);
              request.span.setAttribute('loom.pdf.pages', parsed.pages.length);
              return answer(parsed);
            },
          },
        ],
        health: () => ({ workers: pool.workers, maxPages }),
        close: () => pool.close(),
      });
    },
  };
}

/** A PDF starts with `%PDF-` within its first kilobyte (some writers put junk before it, and pdf.js accepts that). */
function isPdf(bytes: Buffer): boolean {
  return bytes.subarray(0, 1024).includes('%PDF-');
}

async function parse(pool: PdfWorkerPool, bytes: Buffer, signal: AbortSignal, field: string | undefined): Promise<ParsedPdf> {
  try {
    return await pool.parse(bytes, signal);
  } catch (error) {
    if (!(error instanceof PdfParseError)) throw error;
    const options = { ...(field === undefined ? {} : { field }), cause: error };
    switch (error.kind) {
      case 'encrypted':
        throw new UnprocessableError('pdf_encrypted', error.message, options);
      case 'malformed':
        throw new UnprocessableError('pdf_malformed', error.message, options);
      case 'too_many_pages':
        throw new PayloadTooLargeError(error.message, options);
      case 'too_complex':
        throw new UnprocessableError('pdf_too_complex', error.message, options);
      case 'closed':
        throw new ServiceBusyError('stopping', error.message);
    }
  }
}

function answer(parsed: ParsedPdf): unknown {
  const info = parsed.info;
  const text = (key: string): string | null => {
    const value = info[key];
    return typeof value === 'string' && value.trim() !== '' ? value.trim() : null;
  };
  return {
    text: parsed.pages.map((page) => page.text).join('\n\n'),
    pages: parsed.pages,
    metadata: {
      title: text('Title'),
      author: text('Author'),
      subject: text('Subject'),
      keywords: text('Keywords'),
      creator: text('Creator'),
      producer: text('Producer'),
      creationDate: pdfDate(info.CreationDate),
      modificationDate: pdfDate(info.ModDate),
      pdfVersion: text('PDFFormatVersion'),
      pageCount: parsed.pages.length,
    },
  };
}
