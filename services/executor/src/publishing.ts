import { randomUUID } from 'node:crypto';
import { status } from '@grpc/grpc-js';
import { type PublishedMessage, type PublishResult } from '@loom/contracts';
import { ValidationError } from '@loom/domain';
import { type ErrorSink, toStatusObject } from '@loom/service-kit';
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
 * Publishes a batch to an inlet in order, one message after the other, each acknowledged only
 * once the workflow accepted it (waiting while its queue is full). A message that is refused
 * (no body, the workflow stopping) gets its own error; the others go on. Once `signal` aborts
 * (the caller cancelled or its deadline passed), the messages not yet accepted are refused as
 * CANCELLED without being published. `field` names the list in errors (`messages`).
 */
export async function publishBatch(
  run: WorkflowRun,
  inlet: string,
  messages: readonly PublishedMessage[],
  signal: AbortSignal,
  field: string,
  errorSink: ErrorSink,
): Promise<PublishResult[]> {
  const results: PublishResult[] = [];
  const withdrawal = { signal };
  for (const [index, message] of messages.entries()) {
    const clientId = message.messageId !== '';
    const messageId = clientId ? message.messageId : randomUUID();
    if (message.body === undefined) {
      results.push(refused(messageId, status.INVALID_ARGUMENT, 'is required: a JSON object', `${field}[${index}].body`));
      continue;
    }
    if (signal.aborted) {
      results.push(refused(messageId, status.CANCELLED, 'the call ended before this message was accepted', ''));
      continue;
    }
    try {
      const outcome = await run.publish(inlet, { id: messageId, body: message.body, headers: { ...message.headers } }, withdrawal, clientId);
      results.push({ messageId, accepted: true, duplicate: outcome === 'duplicate', error: undefined });
    } catch (error) {
      const { code, details } = toStatusObject(error, errorSink);
      results.push(refused(messageId, code ?? status.UNKNOWN, details ?? 'not accepted', ''));
    }
  }
  return results;
}

function refused(messageId: string, code: status, message: string, field: string): PublishResult {
  return { messageId, accepted: false, duplicate: false, error: { code, message: field === '' ? message : `${field}: ${message}`, field } };
}
