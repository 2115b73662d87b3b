import { randomUUID } from 'node:crypto';
import { status } from '@grpc/grpc-js';
import { type PublishedMessage, type PublishResult } from '@loom/contracts';
import { type FieldViolation, ValidationError } from '@loom/domain';
import { MAX_VIOLATIONS_IN_MESSAGE } from '@loom/foundation';
import { type ErrorSink, statusError, toStatusObject } from '@loom/service-kit';
import { type WorkflowRun } from './runtime/workflow-run.js';

/** Most messages one PublishMessages call or one PublishStream request may carry. */
export const MAX_PUBLISH_BATCH = 1000;

/** Refuses a batch larger than MAX_PUBLISH_BATCH, naming the field. */
export function checkBatchSize(messages: readonly PublishedMessage[], field: string): void {
  if (messages.length > MAX_PUBLISH_BATCH) {
    throw ValidationError.of(field, `holds ${messages.length} messages; at most ${MAX_PUBLISH_BATCH} per call`, 'TOO_MANY');
  }
}

/**
 * Publishes a batch to an inlet in order, each message acknowledged only once the workflow accepted it: in memory, one
 * after the other, each waiting while its queue is full; stored in JetStream, all sent at once (in order, on one
 * connection) and each answered once stored (the run's concurrentPublishes). A message that is refused (no body, the
 * workflow stopping, a full stream) gets its own error; the others go on. Once `signal` aborts (the caller cancelled or
 * its deadline passed), the messages not yet sent are refused as CANCELLED without being published. `field` names the
 * list in errors (`messages`).
 */
export async function publishBatch(
  run: WorkflowRun,
  inlet: string,
  messages: readonly PublishedMessage[],
  signal: AbortSignal,
  field: string,
  errorSink: ErrorSink,
): Promise<PublishResult[]> {
  const results: Promise<PublishResult>[] = [];
  const withdrawal = { signal };
  for (const [index, message] of messages.entries()) {
    const clientId = message.messageId !== '';
    const messageId = clientId ? message.messageId : randomUUID();
    if (message.body === undefined) {
      results.push(Promise.resolve(refused(messageId, status.INVALID_ARGUMENT, 'is required: a JSON object', `${field}[${index}].body`)));
      continue;
    }
    if (signal.aborted) {
      results.push(Promise.resolve(refused(messageId, status.CANCELLED, 'the call ended before this message was accepted', '')));
      continue;
    }
    const result = run.publish(inlet, { id: messageId, body: message.body, headers: { ...message.headers } }, withdrawal, clientId).then(
      (outcome): PublishResult => ({ messageId, accepted: true, duplicate: outcome === 'duplicate', error: undefined }),
      (error: unknown) => {
        const { code, details } = toStatusObject(error, errorSink);
        return refused(messageId, code ?? status.UNKNOWN, details ?? 'not accepted', '');
      },
    );
    // in memory the next message waits for this one's room; JetStream takes a batch's publishes one after the other as sent
    if (!run.concurrentPublishes) await result;
    results.push(result);
  }
  return Promise.all(results);
}

/**
 * PublishMessages' rule: a non-empty batch of which no message was accepted fails with the first refusal's status code,
 * its text naming the refusals (the first MAX_VIOLATIONS_IN_MESSAGE) and its google.rpc.BadRequest details one
 * violation per message (its field, or `messages[i]`). A batch with one message accepted (a duplicate counts) is OK.
 */
export function throwIfNoneAccepted(results: readonly PublishResult[], field: string): void {
  if (results.length === 0 || results.some((result) => result.accepted)) return;
  const violations = results.map((result, index): FieldViolation => {
    const at = result.error?.field || `${field}[${index}]`;
    const text = result.error?.message ?? 'not accepted';
    return { field: at, description: text.startsWith(`${at}: `) ? text.slice(at.length + 2) : text, reason: status[result.error?.code ?? status.UNKNOWN] };
  });
  const shown = violations.slice(0, MAX_VIOLATIONS_IN_MESSAGE).map((violation) => `${violation.field}: ${violation.description}`);
  const more = violations.length - shown.length;
  const message = `no message of the ${results.length} was accepted: ${shown.join('; ')}${more > 0 ? ` (and ${more} more)` : ''}`;
  throw statusError(results[0]?.error?.code ?? status.UNKNOWN, message, violations);
}

function refused(messageId: string, code: status, message: string, field: string): PublishResult {
  return { messageId, accepted: false, duplicate: false, error: { code, message: field === '' ? message : `${field}: ${message}`, field } };
}
