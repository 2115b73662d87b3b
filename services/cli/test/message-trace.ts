import { fileURLToPath } from 'node:url';
import { credentials, Metadata } from '@grpc/grpc-js';
import { ExecutorClient, type PublishMessageRequest, type PublishMessagesRequest } from '@loom/contracts';
import { call } from '@loom/service-kit';
import { startTelemetry, type Telemetry } from '@loom/telemetry';
import { EXECUTOR_STACK_ARGUMENTS, OTLP_SPAN_KIND, type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from '@loom/testing';
import { propagation, ROOT_CONTEXT, type Span, SpanKind, type TextMapSetter, trace } from '@opentelemetry/api';
import { expect, vi } from 'vitest';
import { type InProcessLoom, runCli, startLoom } from './loom-in-process.js';

/**
 * The parts of the one-trace-per-message tests (message-trace*.test.ts, issue 49): a real OTLP/HTTP receiver, a loom in
 * this process exporting its spans to it, the compact example workflow running, and a caller traced the way any
 * OpenTelemetry-instrumented gRPC client is: a CLIENT span around the call, its W3C trace context in the call's metadata.
 */

const EXAMPLE = fileURLToPath(new URL('../../../examples/article-pipeline.workflow.yaml', import.meta.url));
/** The example's workflow and its components, as its compact file names them. */
export const WORKFLOW = 'Article pipeline';
export const INLET = 'Articles';
/** Each component's spans, source to sink, as a message long enough to pass the filter goes through them. */
export const MESSAGE_SPANS = ['emit Articles', 'process Clean up', 'process Long enough', 'process Log'];
/** What a span name must not hold: the instance names' uuids. */
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i;

/** Loom exporting to a receiver, with a traced caller beside it. */
export interface TracedLoom {
  readonly loom: InProcessLoom;
  readonly receiver: OtlpReceiver;
  /** The caller's own tracing: its spans go to the same receiver under service.name `caller`. */
  readonly caller: Telemetry;
  /** The example's stored name `Article pipeline_<uuid>`. */
  readonly workflowName: string;
  stop(): Promise<void>;
}

/**
 * Starts a receiver, then loom (the executor stack, `settings` added) exporting to it with its telemetry registered as
 * the binary registers it, and the caller's tracing; pushes and starts the compact example.
 */
export async function startTracedLoom(settings: readonly string[] = []): Promise<TracedLoom> {
  // spans leave in batches every 100 ms instead of every 5 s (the standard variable of the SDK's batch processor)
  vi.stubEnv('OTEL_BSP_SCHEDULE_DELAY', '100');
  const receiver = await startOtlpReceiver();
  const caller = startTelemetry({ serviceName: 'caller', otlpEndpoint: receiver.url, register: false });
  let loom: InProcessLoom | undefined;
  try {
    loom = await startLoom(
      [...EXECUTOR_STACK_ARGUMENTS, '--set', `loom.telemetry.otlp.endpoint=${receiver.url}`, ...settings.flatMap((setting) => ['--set', setting])],
      {},
      { registerTelemetry: true },
    );
    const cli = (...args: string[]) => runCli(['--address', (loom as InProcessLoom).address, ...args]);
    expect((await cli('workflow', 'push', EXAMPLE)).status).toBe(0);
    const started = await cli('workflow', 'start', WORKFLOW);
    expect(started.stderr).toBe('');
    const workflowName = (JSON.parse((await cli('workflow', 'list', '--output', 'json')).stdout) as { name: string }[])[0]?.name ?? '';
    const running = loom;
    return {
      loom,
      receiver,
      caller,
      workflowName,
      async stop() {
        await Promise.allSettled([running.stop(), caller.shutdown()]);
        await receiver.close();
        vi.unstubAllEnvs();
      },
    };
  } catch (error) {
    await Promise.allSettled([loom?.stop(), caller.shutdown()]);
    await receiver.close();
    throw error;
  }
}

/** Writes W3C trace context into gRPC metadata, as gRPC instrumentations do. */
const metadataSetter: TextMapSetter<Metadata> = {
  set: (carrier, key, value) => carrier.set(key, value),
};

/**
 * Makes a call as a traced client does: a CLIENT span (RPC conventions) around it, its context injected into the call's
 * metadata by the W3C propagator. Answers what `send` answered and the client span, ended and flushed to the receiver.
 */
async function callTraced<T>(
  traced: TracedLoom,
  method: string,
  send: (client: ExecutorClient, metadata: Metadata) => Promise<T>,
): Promise<{ span: Span; answer: T }> {
  const client = new ExecutorClient(traced.loom.address, credentials.createInsecure());
  const span = traced.caller.tracer.startSpan(`loom.v1.Executor/${method}`, {
    kind: SpanKind.CLIENT,
    attributes: { 'rpc.system': 'grpc', 'rpc.service': 'loom.v1.Executor', 'rpc.method': method },
  });
  try {
    const metadata = new Metadata();
    // the process's propagator is W3C trace context (loom registered it here; a client's own SDK registers the same)
    propagation.inject(trace.setSpan(ROOT_CONTEXT, span), metadata, metadataSetter);
    expect(metadata.get('traceparent')).toHaveLength(1);
    return { span, answer: await send(client, metadata) };
  } finally {
    span.end();
    client.close();
    await traced.caller.tracerProvider.forceFlush();
  }
}

/** PublishMessage from a traced client, the message's own headers without `traceparent`; answers the client span and the message id. */
export async function publishTraced(
  traced: TracedLoom,
  request: Omit<PublishMessageRequest, 'workflowName' | 'inlet'>,
): Promise<{ span: Span; messageId: string }> {
  const { span, answer } = await callTraced(traced, 'PublishMessage', (client, metadata) =>
    call(client, 'publishMessage', { workflowName: WORKFLOW, inlet: INLET, ...request }, { metadata }),
  );
  return { span, messageId: answer.messageId };
}

/** PublishMessages from a traced client; answers the client span and the message ids. */
export async function publishBatchTraced(traced: TracedLoom, messages: PublishMessagesRequest['messages']): Promise<{ span: Span; messageIds: string[] }> {
  const { span, answer } = await callTraced(traced, 'PublishMessages', (client, metadata) =>
    call(client, 'publishMessages', { workflowName: WORKFLOW, inlet: INLET, messages }, { metadata }),
  );
  expect(answer.results.every((result) => result.accepted)).toBe(true);
  return { span, messageIds: answer.results.map((result) => result.messageId) };
}

/** The spans of a trace the receiver got. */
export function traceOf(receiver: OtlpReceiver, traceId: string): ReceivedSpan[] {
  return receiver.spans().filter((span) => span.traceId === traceId);
}

/**
 * Waits until the receiver holds the path of each message in the client span's trace, then asserts what an engineer
 * sees in their backend: one trace from the caller's span through loom's span of the call (PublishMessage: carrying the
 * message id; PublishMessages: the ids; both the workflow) to each component's span, each the child of the one before,
 * named after the components. Answers each message's path.
 */
export async function expectOneTrace(traced: TracedLoom, client: Span, messageIds: readonly string[], method = 'PublishMessage'): Promise<ReceivedSpan[][]> {
  const { traceId, spanId } = client.spanContext();
  await expect.poll(() => traceOf(traced.receiver, traceId).filter((span) => span.name === 'process Log').length).toBe(messageIds.length);
  const spans = traceOf(traced.receiver, traceId);
  expect(traced.receiver.refused).toEqual([]);

  const callerSpan = spans.find((span) => span.spanId === spanId);
  expect(callerSpan, 'the client span, exported by the caller').toMatchObject({ service: 'caller', kind: OTLP_SPAN_KIND.CLIENT });
  const publish = spans.find((span) => span.name === `loom.v1.Executor/${method}` && span.kind === OTLP_SPAN_KIND.SERVER);
  const named = messageIds.length === 1 ? { 'loom.message.id': messageIds[0] } : { 'loom.message.ids': messageIds, 'loom.message.count': messageIds.length };
  expect(publish, `loom's ${method} span`).toMatchObject({
    service: 'loom',
    parentSpanId: spanId,
    attributes: expect.objectContaining({ ...named, 'loom.workflow.name': traced.workflowName }) as unknown,
  });

  const paths = messageIds.map((messageId) => {
    // the message's spans, source to sink: each the child of the one before, the first the child of the publish span
    const path: ReceivedSpan[] = [];
    let parent = publish?.spanId;
    for (const name of MESSAGE_SPANS) {
      const next = spans.find((span) => span.name === name && span.parentSpanId === parent && span.attributes['loom.message.id'] === messageId);
      expect(next, `${messageId}: ${name}, child of ${path.at(-1)?.name ?? `the ${method} span`}`).toBeDefined();
      expect(next?.attributes).toMatchObject({ 'loom.workflow.name': traced.workflowName });
      path.push(next as ReceivedSpan);
      parent = next?.spanId;
    }
    // the names a person wrote in the span names; the instance names (with their uuids) in the attributes
    expect(path.map((span) => span.attributes['loom.component.name'])).toEqual(
      ['Articles', 'Clean up', 'Long enough', 'Log'].map((name) => expect.stringMatching(new RegExp(`^${name}_[0-9a-f-]{36}$`)) as unknown),
    );
    return path;
  });
  for (const span of spans) expect(span.name, 'a span name without a uuid').not.toMatch(UUID);
  return paths;
}
