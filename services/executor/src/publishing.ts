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

function refused(messageId: string, code: status, message: string, field: string): PublishResult {
  return { messageId, accepted: false, duplicate: false, error: { code, message: field === '' ? message : `${field}: ${message}`, field } };
}
