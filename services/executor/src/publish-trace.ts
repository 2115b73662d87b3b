import { type Metadata } from '@grpc/grpc-js';
import { type Context, context as otelContext, isSpanContextValid, propagation, ROOT_CONTEXT, trace } from '@opentelemetry/api';
import { type CallContext } from '@loom/service-kit';
import { metadataGetter } from '@loom/telemetry/grpc';
import { ATTR_MESSAGE_ID, ATTR_WORKFLOW_NAME, TRACE_HEADERS, TRACEPARENT } from './runtime/tracing.js';

/** The ids of the messages a PublishMessages call published, in order, on its span. */
export const ATTR_MESSAGE_IDS = 'loom.message.ids';
/** How many messages a publishing call published (PublishMessages, PublishStream), on its span. */
export const ATTR_MESSAGE_COUNT = 'loom.message.count';

/** A publish call's span and the trace its messages join. */
export interface PublishTrace {
  /** The message's headers: its own, with the call's trace context when it has no `traceparent` of its own. */
  headersOf(own: Readonly<Record<string, string>>): Record<string, string>;
  /** The messages, each with headersOf its own; the same array when the call has no trace context to give. */
  withTrace<M extends { readonly headers: Readonly<Record<string, string>> }>(messages: readonly M[]): readonly M[];
  /** Records a unary call's messages on its span: the workflow and the message's id, or the batch's ids and count. */
  published(workflowName: string, messages: readonly { readonly messageId: string }[]): void;
  /** Records a stream request's messages on the call's span: the workflow and the count so far (each message's own spans carry its id). */
  streamed(workflowName: string, messages: number): void;
}

/**
 * The trace of a PublishMessage, PublishMessages or PublishStream call (issue 49), read when the handler starts. When the
 * caller sent W3C trace context in the call's metadata, each message without a `traceparent` header of its own gets the
 * call's: its server span (the telemetry's gRPC interceptor, active while the handler runs) becomes the parent of the
 * message's spans, in memory as in JetStream, where the headers are stored with the message. A message's own
 * `traceparent` wins. A call without trace context adds nothing: its messages are sampled as a source's are.
 */
export function publishTrace(call: CallContext): PublishTrace {
  const active = trace.getActiveSpan();
  const span = active?.isRecording() === true ? active : undefined;
  const inherited = callTraceHeaders(call.metadata, otelContext.active());
  let streamed = 0;
  return {
    headersOf(own) {
      return inherited === undefined || own[TRACEPARENT] !== undefined ? { ...own } : { ...own, ...inherited };
    },
    withTrace(messages) {
      return inherited === undefined ? messages : messages.map((message) => ({ ...message, headers: this.headersOf(message.headers) }));
    },
    published(workflowName, messages) {
      if (span === undefined) return;
      span.setAttribute(ATTR_WORKFLOW_NAME, workflowName);
      const [first] = messages;
      if (messages.length === 1 && first !== undefined) {
        span.setAttribute(ATTR_MESSAGE_ID, first.messageId);
      } else {
        const ids = messages.map(({ messageId }) => messageId);
        span.setAttribute(ATTR_MESSAGE_IDS, ids);
        span.setAttribute(ATTR_MESSAGE_COUNT, messages.length);
      }
    },
    streamed(workflowName, messages) {
      if (span === undefined) return;
      streamed += messages;
      span.setAttribute(ATTR_WORKFLOW_NAME, workflowName);
      span.setAttribute(ATTR_MESSAGE_COUNT, streamed);
    },
  };
}

/**
 * The trace headers (`traceparent`, `tracestate`) of the call's active context when the caller sent trace context in
 * the metadata; undefined when it sent none, or none that is valid.
 */
function callTraceHeaders(metadata: Metadata, active: Context): Readonly<Record<string, string>> | undefined {
  if (metadata.get(TRACEPARENT).length === 0) return undefined;
  const caller = propagation.extract(ROOT_CONTEXT, metadata, metadataGetter);
  const callerSpan = trace.getSpanContext(caller);
  if (callerSpan === undefined || !isSpanContextValid(callerSpan)) return undefined;
  // the server span when the tracing interceptor runs; the caller's own context when nothing traces the call here
  const parent = trace.getSpan(active) === undefined ? caller : active;
  const injected: Record<string, string> = {};
  propagation.inject(parent, injected);
  const headers: Record<string, string> = {};
  for (const name of TRACE_HEADERS) {
    const value = injected[name];
    if (value !== undefined) headers[name] = value;
  }
  return headers[TRACEPARENT] === undefined ? undefined : headers;
}
