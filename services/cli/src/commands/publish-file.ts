import { once } from 'node:events';
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { status } from '@grpc/grpc-js';
import { type ExecutorClient, type PublishedMessage, type PublishStreamRequest, type PublishStreamResponse } from '@loom/contracts';
import { parseJsonText } from '@loom/domain';
import { UsageError } from '../usage-error.js';

/** Messages per PublishStream request. */
const REQUEST_SIZE = 100;
/** Requests sent and not yet answered: enough to keep the server busy, few enough to stop soon when it is full. */
const WINDOW = 8;
/** Refusals listed one by one; the rest are counted. */
const LISTED_ERRORS = 20;

/** What publishing a file came to. */
export interface FilePublishSummary {
  readonly file: string;
  readonly messages: number;
  readonly accepted: number;
  readonly duplicates: number;
  readonly refused: number;
  readonly seconds: number;
  /** The first refusals, by line of the file. */
  readonly errors: readonly { line: number; messageId: string; code: string; message: string }[];
}

/** How to publish a file. */
export interface FilePublishOptions {
  readonly workflowName: string;
  readonly inlet: string;
  readonly file: string;
  /** A body field whose value is the message id (de-duplication); generated ids without it. */
  readonly idField?: string;
  /** Called as messages are acknowledged (a progress bar). */
  readonly onProgress?: (done: number, total: number) => void;
}

/** Reads the JSON lines of a file; blank lines are skipped. */
async function* linesOf(file: string): AsyncGenerator<{ line: number; text: string }> {
  const stream = createReadStream(file, { encoding: 'utf8' });
  const opened = new Promise<void>((resolve, reject) => {
    stream.once('open', () => resolve());
    stream.once('error', reject);
  });
  try {
    await opened;
  } catch (error) {
    throw new UsageError(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
  let line = 0;
  for await (const text of createInterface({ input: stream, crlfDelay: Infinity })) {
    line++;
    if (text.trim() !== '') yield { line, text };
  }
}

function messageOf(file: string, line: number, text: string, idField: string | undefined): PublishedMessage {
  let body: unknown;
  try {
    body = parseJsonText(text);
  } catch (error) {
    throw new UsageError(`${file}:${line}: not valid JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new UsageError(`${file}:${line}: each line must be a JSON object (a message body)`);
  let messageId = '';
  if (idField !== undefined) {
    const value = (body as Record<string, unknown>)[idField];
    if (typeof value !== 'string' && typeof value !== 'number') throw new UsageError(`${file}:${line}: --id-field ${idField}: the body has no string or number field '${idField}'`);
    messageId = String(value);
  }
  return { body: body, headers: {}, messageId };
}

/**
 * Publishes every line of a JSON-lines file as a message, over one PublishStream call. The file
 * is checked whole first (a bad line stops everything before anything is sent), then streamed in
 * requests of 100 messages, at most 8 requests unanswered; the server's flow control slows the
 * sending down while the workflow is full.
 */
export async function publishFile(client: ExecutorClient, options: FilePublishOptions): Promise<FilePublishSummary> {
  let total = 0;
  for await (const { line, text } of linesOf(options.file)) {
    messageOf(options.file, line, text, options.idField);
    total++;
  }
  const started = performance.now();
  const stream = client.publishStream();
  const pendingLines: number[][] = [];
  let accepted = 0;
  let duplicates = 0;
  let refused = 0;
  const errors: { line: number; messageId: string; code: string; message: string }[] = [];
  let answered: (() => void) | undefined;
  stream.on('data', (response: PublishStreamResponse) => {
    const lines = pendingLines.shift() ?? [];
    response.results.forEach((result, index) => {
      if (result.accepted) {
        accepted++;
        if (result.duplicate) duplicates++;
        return;
      }
      refused++;
      if (errors.length < LISTED_ERRORS) {
        errors.push({
          line: lines[index] ?? 0,
          messageId: result.messageId,
          code: status[result.error?.code ?? status.UNKNOWN] ?? String(result.error?.code),
          message: result.error?.message ?? '',
        });
      }
    });
    options.onProgress?.(accepted + refused, total);
    answered?.();
  });
  const ended = new Promise<void>((resolve, reject) => {
    stream.once('end', resolve);
    stream.once('error', reject);
  });
  // an error ends the call: the writer stops waiting for answers that will not come (awaiting `ended` reports it)
  let failed = false;
  void ended.catch(() => {
    failed = true;
    answered?.();
  });
  let batch: PublishedMessage[] = [];
  let lines: number[] = [];
  let first = true;
  const flush = async (): Promise<void> => {
    if (batch.length === 0) return;
    while (pendingLines.length >= WINDOW && !failed) await new Promise<void>((resolve) => (answered = resolve));
    if (failed) return;
    const request: PublishStreamRequest = first
      ? { workflowName: options.workflowName, inlet: options.inlet, messages: batch }
      : { workflowName: '', inlet: '', messages: batch };
    first = false;
    pendingLines.push(lines);
    batch = [];
    lines = [];
    if (!stream.write(request)) await Promise.race([once(stream, 'drain'), ended.catch(() => undefined)]);
  };
  for await (const { line, text } of linesOf(options.file)) {
    if (failed) break;
    batch.push(messageOf(options.file, line, text, options.idField));
    lines.push(line);
    if (batch.length === REQUEST_SIZE) await flush();
  }
  await flush();
  stream.end();
  await ended;
  return { file: options.file, messages: total, accepted, duplicates, refused, seconds: (performance.now() - started) / 1000, errors };
}

/** A progress bar on a terminal's stderr, redrawn at most ten times a second; nothing elsewhere. */
export function progressBar(stream: NodeJS.WriteStream): { update(done: number, total: number): void; finish(): void } {
  if (!stream.isTTY) return { update: () => undefined, finish: () => undefined };
  const started = performance.now();
  let drawn = 0;
  let shown = false;
  const draw = (done: number, total: number): void => {
    const width = 30;
    const share = total === 0 ? 1 : done / total;
    const filled = Math.round(share * width);
    const rate = done / Math.max((performance.now() - started) / 1000, 0.001);
    stream.write(`\r[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done.toLocaleString('en')}/${total.toLocaleString('en')} ${Math.floor(share * 100)}%  ${Math.round(rate).toLocaleString('en')} msg/s `);
    shown = true;
  };
  return {
    update(done, total) {
      const now = performance.now();
      if (now - drawn < 100 && done < total) return;
      drawn = now;
      draw(done, total);
    },
    finish() {
      if (shown) stream.write('\n');
    },
  };
}
