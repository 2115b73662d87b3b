import { type ExecutorService, MessageEventKind, type MessageEvent as MessageEventProto, type TraceMessageResponse } from '@loom/contracts';
import { LoomError, ValidationError } from '@loom/domain';
import { type AsyncImplementation } from '@loom/service-kit';
import { type SecretRedactor } from '@loom/telemetry';
import { type ExecutorEvent, redacted, type TracePeers } from './cluster/trace-peers.js';
import { type MessageEvent, type MessageTrail, type TrailBounds } from './runtime/message-trail.js';

const KINDS: Readonly<Record<MessageEvent['kind'], MessageEventKind>> = {
  ACCEPTED: MessageEventKind.MESSAGE_EVENT_KIND_ACCEPTED,
  PROCESSED: MessageEventKind.MESSAGE_EVENT_KIND_PROCESSED,
  ATTEMPT_FAILED: MessageEventKind.MESSAGE_EVENT_KIND_ATTEMPT_FAILED,
  FAILED: MessageEventKind.MESSAGE_EVENT_KIND_FAILED,
  RETRIED: MessageEventKind.MESSAGE_EVENT_KIND_RETRIED,
};

/** No event of the message is kept here (nor, in a cluster, on the other executors that answered). */
export class MessageNotTracedError extends LoomError {
  readonly kind = 'not-found';

  constructor(
    readonly messageId: string,
    readonly workflow: string,
    executorIds: readonly string[],
    bounds: TrailBounds,
    unanswered: readonly string[] = [],
  ) {
    super(
      `no events of message '${messageId}'${workflow === '' ? '' : ` in workflow '${workflow}'`} on ` +
        `${executorIds.length === 1 ? 'executor' : 'executors'} ${executorIds.map((id) => `'${id}'`).join(', ')}: ` +
        `never seen, or past the retention (loom.executor.messageTrace.retentionMs ${bounds.retentionMs} ms, ` +
        `loom.executor.messageTrace.maxMessages ${bounds.maxMessages} per workflow)` +
        (unanswered.length === 0 ? '' : `; not answering in time: ${unanswered.map((id) => `'${id}'`).join(', ')}`),
    );
  }
}

/** What TraceMessage needs of the executor. */
export interface TraceSource {
  readonly trail: MessageTrail;
  readonly executorId: string;
  readonly redactor: SecretRedactor;
  /** Its cluster (durable mode), whose other executors' trails are asked too; undefined: this executor's trail alone. */
  readonly clusterMember?: { readonly peers: TracePeers } | undefined;
}

/**
 * The TraceMessage handler: a message's events from this executor's trail and, in a cluster, from every other
 * executor's (asked over NATS), oldest first by the recording executor's clock; failures redacted as the logs are.
 */
export function traceHandlers(executor: TraceSource): Pick<AsyncImplementation<typeof ExecutorService>, 'traceMessage'> {
  return {
    async traceMessage(request) {
      const messageId = request.messageId.trim();
      if (messageId === '') throw ValidationError.of('message_id', 'is required: the id of the message to trace', 'MISSING_FIELD');
      const { bounds } = executor.trail;
      const own = executor.trail.find(messageId, request.workflowName)?.events ?? [];
      const events: ExecutorEvent[] = own.map((event) => ({ ...event, executorId: executor.executorId }));
      const peers = await executor.clusterMember?.peers.ask(messageId, request.workflowName);
      const unanswered = peers?.unanswered ?? [];
      const executors = [executor.executorId, ...(peers?.asked ?? []).filter((id) => !unanswered.includes(id))];
      if (peers !== undefined) {
        events.push(...peers.events);
        // each executor's events are in order already: a stable sort keeps them so within a millisecond
        events.sort((a, b) => a.time - b.time);
      }
      if (events.length === 0) throw new MessageNotTracedError(messageId, request.workflowName, executors, bounds, unanswered);
      const response: TraceMessageResponse = {
        messageId,
        events: events.map((event) => eventToProto(redacted(event, executor.redactor))),
        executorId: executor.executorId,
        maxMessages: bounds.maxMessages,
        retention: { seconds: Math.floor(bounds.retentionMs / 1000), nanos: (bounds.retentionMs % 1000) * 1_000_000 },
        executors,
        unanswered: [...unanswered],
      };
      return response;
    },
  };
}

/** An event as TraceMessage answers it (its failure already redacted). */
function eventToProto(event: ExecutorEvent): MessageEventProto {
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
            message: failure.message,
            cause: failure.cause ?? '',
          },
    failureHandler: event.failureHandler ?? '',
    workflowName: event.workflowName,
    workflowVersion: event.workflowVersion,
    runId: event.runId,
    executorId: event.executorId,
  };
}
