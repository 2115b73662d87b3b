import { type ExecutorService, MessageEventKind, type MessageEvent as MessageEventProto, type TraceMessageResponse } from '@loom/contracts';
import { LoomError, ValidationError } from '@loom/domain';
import { type AsyncImplementation } from '@loom/service-kit';
import { type SecretRedactor } from '@loom/telemetry';
import { type MessageEvent, type MessageTrail, type TrailBounds } from './runtime/message-trail.js';

const KINDS: Readonly<Record<MessageEvent['kind'], MessageEventKind>> = {
  ACCEPTED: MessageEventKind.MESSAGE_EVENT_KIND_ACCEPTED,
  PROCESSED: MessageEventKind.MESSAGE_EVENT_KIND_PROCESSED,
  ATTEMPT_FAILED: MessageEventKind.MESSAGE_EVENT_KIND_ATTEMPT_FAILED,
  FAILED: MessageEventKind.MESSAGE_EVENT_KIND_FAILED,
  RETRIED: MessageEventKind.MESSAGE_EVENT_KIND_RETRIED,
};

/** No event of the message is kept here: never seen by this executor, or past the trail's bounds. */
export class MessageNotTracedError extends LoomError {
  readonly kind = 'not-found';

  constructor(
    readonly messageId: string,
    readonly workflow: string,
    executorId: string,
    bounds: TrailBounds,
  ) {
    super(
      `no events of message '${messageId}'${workflow === '' ? '' : ` in workflow '${workflow}'`} on executor '${executorId}': ` +
        `never seen here, or past the retention (loom.executor.messageTrace.retentionMs ${bounds.retentionMs} ms, ` +
        `loom.executor.messageTrace.maxMessages ${bounds.maxMessages} per workflow)`,
    );
  }
}

/** What TraceMessage needs of the executor. */
export interface TraceSource {
  readonly trail: MessageTrail;
  readonly executorId: string;
  readonly redactor: SecretRedactor;
}

/** The TraceMessage handler: a message's events from this executor's trail, failures redacted as the logs are. */
export function traceHandlers(executor: TraceSource): Pick<AsyncImplementation<typeof ExecutorService>, 'traceMessage'> {
  return {
    traceMessage(request) {
      const messageId = request.messageId.trim();
      if (messageId === '') return Promise.reject(ValidationError.of('message_id', 'is required: the id of the message to trace', 'MISSING_FIELD'));
      const { bounds } = executor.trail;
      const found = executor.trail.find(messageId, request.workflowName);
      if (found === undefined) return Promise.reject(new MessageNotTracedError(messageId, request.workflowName, executor.executorId, bounds));
      const response: TraceMessageResponse = {
        messageId,
        events: found.events.map((event) => eventToProto(event, executor.redactor)),
        executorId: executor.executorId,
        maxMessages: bounds.maxMessages,
        retention: { seconds: Math.floor(bounds.retentionMs / 1000), nanos: (bounds.retentionMs % 1000) * 1_000_000 },
      };
      return Promise.resolve(response);
    },
  };
}

function eventToProto(event: MessageEvent, redactor: SecretRedactor): MessageEventProto {
  const failure = event.failure;
  return {
    time: new Date(event.time),
    kind: KINDS[event.kind],
    component: event.component,
    messageId: event.messageId,
    outputIds: [...(event.outputIds ?? [])],
    outputCount: event.outputCount ?? 0,
    attempt: event.attempt ?? 0,
    failure:
      failure === undefined
        ? undefined
        : {
            kind: failure.kind,
            retryable: failure.retryable,
            message: redactor.redact(failure.message),
            cause: failure.cause === undefined ? '' : redactor.redact(failure.cause),
          },
    failureHandler: event.failureHandler ?? '',
    workflowName: event.workflowName,
    workflowVersion: event.workflowVersion,
    runId: event.runId,
  };
}
