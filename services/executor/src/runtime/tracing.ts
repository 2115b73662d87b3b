import {
  type Context,
  context,
  type Link,
  propagation,
  ROOT_CONTEXT,
  type Span,
  type SpanContext,
  SpanKind,
  SpanStatusCode,
  type TextMapGetter,
  type TextMapSetter,
  trace,
  type Tracer,
} from '@opentelemetry/api';
import { parseStoredName } from '@loom/domain';
import { TELEMETRY_SCOPE } from '@loom/telemetry';
import { type LoomMessage } from './component.js';

/** The message header that carries a message's W3C trace context from hop to hop. */
export const TRACEPARENT = 'traceparent';

/** The W3C trace-context headers a message keeps from a request and passes on to the services it calls. */
export const TRACE_HEADERS: readonly string[] = [TRACEPARENT, 'tracestate'];

/** Span attributes of the executor's spans. */
export const ATTR_WORKFLOW_NAME = 'loom.workflow.name';
export const ATTR_RUN_ID = 'loom.run.id';
export const ATTR_COMPONENT_NAME = 'loom.component.name';
export const ATTR_MESSAGE_ID = 'loom.message.id';
export const ATTR_MESSAGE_RETRIES = 'loom.message.retries';

/**
 * What a span is named after for an instance name `<name>_<uuid>` (a workflow's, a component's): the plain name a
 * person wrote, so that a trace reads `process Clean up`; the full name, uuid and all, stays in the span's attributes.
 */
export function spanNameOf(instanceName: string): string {
  return parseStoredName(instanceName)?.base ?? instanceName;
}

const headerGetter: TextMapGetter<Readonly<Record<string, string>>> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => carrier[key],
};

const headerSetter: TextMapSetter<Record<string, string>> = {
  set: (carrier, key, value) => {
    carrier[key] = value;
  },
};

/** Whether a message carries a trace context whose sampled flag is set (W3C: the last two hex digits, bit 0). */
export function isTraced(message: LoomMessage): boolean {
  const header = message.headers[TRACEPARENT];
  return header !== undefined && header.length >= 55 && (Number.parseInt(header.slice(-2), 16) & 1) === 1;
}

/** The span context a traced message carries (a span link to it from a batch), or undefined. */
export function spanContextOf(message: LoomMessage): SpanContext | undefined {
  if (!isTraced(message)) return undefined;
  return trace.getSpanContext(propagation.extract(ROOT_CONTEXT, message.headers, headerGetter));
}

/** The message with its trace headers pointing at `span`; the original is left as it was. */
function carrying(message: LoomMessage, span: Span): LoomMessage {
  const headers = { ...message.headers };
  propagation.inject(trace.setSpan(ROOT_CONTEXT, span), headers, headerSetter);
  return { ...message, headers };
}

/** The spans of one batch: one per traced message, undefined for the others. */
export interface BatchSpans {
  /** The batch as the component sees it: traced messages carry their component span's context. */
  readonly batch: readonly LoomMessage[];
  readonly spans: readonly (Span | undefined)[];
}

/**
 * Tracing of one workflow run: a span for the run (a new trace, linked to the request that started
 * it), and for a sampled share of messages a span per component that handled them. A message's
 * trace context travels in its `traceparent` header, so its spans form a chain across components
 * (and past the workflow, through the enricher's HTTP calls). A message that arrives with a sampled
 * `traceparent` (webhook request, PublishMessage headers) continues the caller's trace and links to
 * the run; one a source makes itself is traced with probability `messageSamplingRatio`, as a child
 * of the run span, and only when the run itself is sampled. Spans are named after the plain names
 * (`workflow Article pipeline`, `process Clean up`); their attributes keep the names with the uuid.
 */
export class RunTracing {
  private readonly runSpan: Span;
  private readonly runContext: Context;
  private readonly runLink: Link;
  private readonly spanNames = new Map<string, string>();

  constructor(
    private readonly workflowName: string,
    runId: string,
    private readonly messageSamplingRatio: number,
    private readonly tracer: Tracer = trace.getTracer(TELEMETRY_SCOPE),
  ) {
    const starter = trace.getSpanContext(context.active());
    this.runSpan = tracer.startSpan(`workflow ${spanNameOf(workflowName)}`, {
      root: true,
      kind: SpanKind.INTERNAL,
      attributes: { [ATTR_WORKFLOW_NAME]: workflowName, [ATTR_RUN_ID]: runId },
      ...(starter === undefined ? {} : { links: [{ context: starter }] }),
    });
    this.runContext = trace.setSpan(ROOT_CONTEXT, this.runSpan);
    this.runLink = { context: this.runSpan.spanContext() };
  }

  /** Ends the run span with the run's outcome. */
  end(state: string, error?: string): void {
    this.runSpan.setAttribute('loom.run.state', state);
    if (error !== undefined && error !== '') this.runSpan.setStatus({ code: SpanStatusCode.ERROR, message: error });
    this.runSpan.end();
  }

  /**
   * A source hands a message to the workflow: when it is to be traced, starts its `emit` span and
   * returns the message carrying that span; otherwise returns undefined (and costs next to nothing).
   */
  emit(component: string, message: LoomMessage): { message: LoomMessage; span: Span } | undefined {
    let parent: Context;
    let links: Link[] | undefined;
    if (message.headers[TRACEPARENT] !== undefined) {
      if (!isTraced(message)) return undefined;
      parent = propagation.extract(ROOT_CONTEXT, message.headers, headerGetter);
      links = [this.runLink];
    } else {
      if (this.messageSamplingRatio <= 0 || !this.runSpan.isRecording() || Math.random() >= this.messageSamplingRatio) return undefined;
      parent = this.runContext;
    }
    const span = this.tracer.startSpan(
      `emit ${this.spanName(component)}`,
      { kind: SpanKind.PRODUCER, attributes: this.attributes(component, message), ...(links === undefined ? {} : { links }) },
      parent,
    );
    return { message: carrying(message, span), span };
  }

  /** A processor takes a batch: a span per traced message; undefined when none of them is traced. */
  process(component: string, batch: readonly LoomMessage[]): BatchSpans | undefined {
    if (!batch.some(isTraced)) return undefined;
    const spans = batch.map((message) => {
      if (!isTraced(message)) return undefined;
      const parent = propagation.extract(ROOT_CONTEXT, message.headers, headerGetter);
      return this.tracer.startSpan(`process ${this.spanName(component)}`, { kind: SpanKind.CONSUMER, attributes: this.attributes(component, message) }, parent);
    });
    return { batch: batch.map((message, index) => (spans[index] === undefined ? message : carrying(message, spans[index]))), spans };
  }

  /** A component's span name part, worked out once per component. */
  private spanName(component: string): string {
    let name = this.spanNames.get(component);
    if (name === undefined) {
      name = spanNameOf(component);
      this.spanNames.set(component, name);
    }
    return name;
  }

  private attributes(component: string, message: LoomMessage): Record<string, string> {
    return { [ATTR_WORKFLOW_NAME]: this.workflowName, [ATTR_COMPONENT_NAME]: component, [ATTR_MESSAGE_ID]: message.id };
  }
}

/** An output of a traced message carries the span of the component that made it. */
export function outputOf(output: LoomMessage, span: Span | undefined): LoomMessage {
  return span === undefined ? output : carrying(output, span);
}

/** Ends a message's component span with what became of the message. */
export function endMessageSpan(span: Span | undefined, error: string | undefined, retries: number): void {
  if (span === undefined) return;
  if (retries > 0) span.setAttribute(ATTR_MESSAGE_RETRIES, retries);
  if (error !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: error });
  span.end();
}
