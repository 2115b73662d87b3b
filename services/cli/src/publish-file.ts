import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { status } from '@grpc/grpc-js';
import { type ExecutorClient, type PublishedMessage, type PublishMessagesRequest, type PublishResult } from '@loom/contracts';
import { parseJsonText } from '@loom/domain';
import { call } from '@loom/service-kit/client';
import { UsageError } from './usage-error.js';
import { type CliOutput } from './cli-io.js';

/** Messages per PublishMessages call (the executor takes at most 1,000). */
export const FILE_BATCH_SIZE = 500;

/** What publishing a file did. */
export interface PublishFileOutcome {
  readonly accepted: number;
  /** Accepted by an earlier publish of the same file (same message ids). */
  readonly duplicate: number;
  /** Lines the workflow did not accept, with the reason. */
  readonly refused: readonly { readonly line: number; readonly message: string }[];
}

export interface PublishFileOptions {
  readonly workflowName: string;
  readonly inlet: string;
  readonly file: string;
  /** Where a progress line is drawn (a terminal), or nothing. */
  readonly progress?: CliOutput | undefined;
  readonly batchSize?: number;
}

/** The non-empty lines of a JSON Lines file with their line numbers. */
async function* linesOf(file: string): AsyncGenerator<{ line: number; text: string }> {
  const input = createReadStream(file, { encoding: 'utf8' });
  const reader = createInterface({ input, crlfDelay: Infinity });
  let line = 0;
  try {
    for await (const text of reader) {
      line += 1;
      if (text.trim() !== '') yield { line, text };
    }
  } catch (error) {
    throw new UsageError(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
}

function bodyOf(file: string, line: number, text: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = parseJsonText(text);
  } catch (error) {
    throw new UsageError(`${file}:${line}: not JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new UsageError(`${file}:${line}: a message body must be a JSON object`);
  return parsed as Record<string, unknown>;
}

/**
 * One PublishMessages call's results. A batch of which no message was accepted fails the call (the executor's rule),
 * its google.rpc.BadRequest details naming the messages (`messages[3]`, `messages[3].body`, the first hundred or so)
 * with their status code as the reason: those are the results then, every message refused. A failure that names no
 * message is thrown.
 */
async function publishedOrRefused(client: ExecutorClient, request: PublishMessagesRequest): Promise<PublishResult[]> {
  try {
    return (await call(client, 'publishMessages', request)).results;
  } catch (error) {
    const { isServiceError, fieldViolationsOf } = await import('@loom/service-kit/errors');
    if (!isServiceError(error)) throw error;
    const results: PublishResult[] = request.messages.map((message) => ({ messageId: message.messageId, accepted: false, duplicate: false, error: undefined }));
    for (const violation of fieldViolationsOf(error)) {
      const index = /^messages\[(\d+)\]/.exec(violation.field)?.[1];
      const result = index === undefined ? undefined : results[Number(index)];
      if (result === undefined) continue;
      const code = (status as unknown as Record<string, number | undefined>)[violation.reason ?? ''] ?? error.code;
      result.error = { code, message: violation.description, field: violation.field };
    }
    if (results.every((result) => result.error === undefined)) throw error;
    // the details name the first refusals only (they are bounded); the rest were refused as well
    const rest = { code: error.code, message: 'not accepted: the executor accepted no message of its batch', field: '' };
    return results.map((result) => (result.error === undefined ? { ...result, error: rest } : result));
  }
}

/**
 * Publishes a JSON Lines file to a workflow's inlet with PublishMessages, in batches. Every line
 * is checked before the first is sent, so a malformed file publishes nothing. Each message's id
 * is derived from the file's content and the line number, so publishing the same file again
 * (after an interruption, say) is answered from the executor's de-duplication instead of
 * publishing twice, within its de-duplication window (65,536 ids per inlet).
 */
export async function publishFile(client: ExecutorClient, options: PublishFileOptions): Promise<PublishFileOutcome> {
  const hash = createHash('sha256');
  let total = 0;
  for await (const { line, text } of linesOf(options.file)) {
    bodyOf(options.file, line, text);
    hash.update(`${line}\n${text}\n`);
    total += 1;
  }
  const fileId = hash.digest('hex').slice(0, 16);
  const batchSize = options.batchSize ?? FILE_BATCH_SIZE;
  let accepted = 0;
  let duplicate = 0;
  const refused: { line: number; message: string }[] = [];
  let batch: { line: number; message: PublishedMessage }[] = [];

  const send = async (): Promise<void> => {
    if (batch.length === 0) return;
    const sent = batch;
    batch = [];
    const results = await publishedOrRefused(client, {
      workflowName: options.workflowName,
      inlet: options.inlet,
      messages: sent.map((entry) => entry.message),
    });
    results.forEach((result, index) => {
      const line = sent[index]?.line ?? 0;
      if (result.duplicate) duplicate += 1;
      else if (result.accepted) accepted += 1;
      else refused.push({ line, message: `${status[result.error?.code ?? status.UNKNOWN] ?? result.error?.code}: ${result.error?.message ?? 'not accepted'}` });
    });
    options.progress?.write(`\rpublished ${accepted + duplicate + refused.length} of ${total}`);
  };

  for await (const { line, text } of linesOf(options.file)) {
    batch.push({ line, message: { body: bodyOf(options.file, line, text), headers: {}, messageId: `${fileId}:${line}` } });
    if (batch.length >= batchSize) await send();
  }
  await send();
  options.progress?.write('\n');
  return { accepted, duplicate, refused };
}
