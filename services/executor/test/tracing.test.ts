import { once } from 'node:events';
import { COMPONENT_KINDS, findResourceDefinition, RESOURCE_KINDS } from '@loom/domain';
import { workflowToProto } from '@loom/domain/proto';
import { ExecutorClient } from '@loom/contracts';
import { call, createClient } from '@loom/service-kit';
import { startTelemetry, type Telemetry } from '@loom/telemetry';
import { clientTracingInterceptor } from '@loom/telemetry/grpc';
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ExecutorHarness, instance, PIPELINE, pipelineWorkflow, startExecutor, workflowOf } from './harness.js';

const exporter = new InMemorySpanExporter();
let telemetry: Telemetry;
let harness: ExecutorHarness;

beforeAll(async () => {
  telemetry = startTelemetry({ serviceName: 'loom-executor-test', spanProcessors: [new SimpleSpanProcessor(exporter)] });
  harness = await startExecutor(['loom.telemetry.messages.sampling.ratio=1']);
});

afterAll(async () => {
  await harness.stop();
  await telemetry.shutdown();
});

/** The message's spans in the workflow (not the publish call's, which carries its id too). */
function spansOf(messageId: string): ReadableSpan[] {
  return exporter.getFinishedSpans().filter((span) => span.attributes['loom.message.id'] === messageId && span.kind !== SpanKind.SERVER);
}

/** The message's spans ordered from the source to the last component, each the parent of the next. */
function chain(spans: readonly ReadableSpan[]): ReadableSpan[] {
  const ids = new Set(spans.map((span) => span.spanContext().spanId));
  const first = spans.find((span) => !ids.has(span.parentSpanContext?.spanId ?? ''));
  const ordered: ReadableSpan[] = [];
  for (let current = first; current !== undefined; current = spans.find((span) => span.parentSpanContext?.spanId === current?.spanContext().spanId)) {
    ordered.push(current);
  }
  return ordered;
}

describe('executor tracing', () => {
  it('traces a run and follows each message across its components through the traceparent header', async () => {
    const put = await call(harness.store, 'putWorkflow', { workflow: workflowToProto(pipelineWorkflow()) });
    const name = put.summary?.name ?? '';
    await call(harness.executor, 'startWorkflow', { name });
    const publish = (messageId: string, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
      call(harness.executor, 'publishMessage', { workflowName: name, inlet: PIPELINE.inlet, body, headers, messageId });

    const passing = await publish('message-passing', { title: 'graphs', text: 'a long enough article text' });
    const filtered = await publish('message-filtered', { title: 'short', text: 'too short' });

    // a caller that traces its request: the message joins the caller's trace
    const caller = telemetry.tracer.startSpan('caller request');
    const carrier: Record<string, string> = {};
    propagation.inject(trace.setSpan(ROOT_CONTEXT, caller), carrier);
    await context.with(trace.setSpan(context.active(), caller), () =>
      publish('message-of-caller', { title: 'traced', text: 'an article the caller traces' }, carrier),
    );
    caller.end();

    await expect.poll(() => spansOf('message-passing').length, { timeout: 10_000 }).toBe(4);
    await expect.poll(() => spansOf('message-of-caller').length, { timeout: 10_000 }).toBe(4);
    await call(harness.executor, 'stopWorkflow', { name });

    // spans are named after the plain names; the attributes keep the names with their uuid
    const run = exporter.getFinishedSpans().find((span) => span.name === 'workflow Article pipeline');
    expect(run, 'the run span, ended at stop').toBeDefined();
    expect(run?.parentSpanContext).toBeUndefined();
    expect(run?.attributes).toMatchObject({ 'loom.workflow.name': pipelineWorkflow().name, 'loom.run.state': 'STOPPED' });
    // the run links to the StartWorkflow request that began it
    const startRpc = exporter.getFinishedSpans().find((span) => span.name === 'loom.v1.Executor/StartWorkflow' && span.kind === SpanKind.SERVER);
    expect(run?.links.map((link) => link.context.spanId)).toEqual([startRpc?.spanContext().spanId]);

    const ofPassing = chain(spansOf(passing.messageId));
    expect(ofPassing.map((span) => span.name)).toEqual(['emit Articles', 'process Clean up', 'process Long enough', 'process Log']);
    expect(ofPassing.map((span) => span.attributes['loom.component.name'])).toEqual([PIPELINE.inlet, PIPELINE.transformer, PIPELINE.filter, PIPELINE.sink]);
    expect(ofPassing[0]?.parentSpanContext?.spanId).toBe(run?.spanContext().spanId);
    for (const span of ofPassing) expect(span.spanContext().traceId).toBe(run?.spanContext().traceId);

    // filtered out by the filter: its chain ends there, without an error
    const ofFiltered = chain(spansOf(filtered.messageId));
    expect(ofFiltered.map((span) => span.name)).toEqual(['emit Articles', 'process Clean up', 'process Long enough']);
    expect(ofFiltered.every((span) => span.status.code !== SpanStatusCode.ERROR)).toBe(true);

    const ofCaller = chain(spansOf('message-of-caller'));
    expect(ofCaller).toHaveLength(4);
    expect(ofCaller[0]?.parentSpanContext?.spanId).toBe(caller.spanContext().spanId);
    for (const span of ofCaller) expect(span.spanContext().traceId).toBe(caller.spanContext().traceId);
    expect(ofCaller[0]?.links.map((link) => link.context.spanId)).toEqual([run?.spanContext().spanId]);
  });

  it('joins what a traced gRPC call publishes to the call: each message without a traceparent of its own, in all three publish calls', async () => {
    const wf = pipelineWorkflow('Call traced_7a8b9c0d-1e2f-4a3b-8c4d-5e6f7a8b9c0d');
    const put = await call(harness.store, 'putWorkflow', { workflow: workflowToProto(wf) });
    const name = put.summary?.name ?? '';
    await call(harness.executor, 'startWorkflow', { name });
    // loom's own traced client: the call's span goes in its metadata, as any OpenTelemetry-instrumented client sends it
    const traced = createClient(ExecutorClient, `127.0.0.1:${harness.running.port}`, {
      retry: false,
      interceptors: [clientTracingInterceptor(telemetry.tracer)],
    });
    const body = { title: 'traced', text: 'an article published by a traced call' };
    // a message whose own traceparent names another trace keeps it
    const elsewhere = telemetry.tracer.startSpan('elsewhere');
    const ownHeaders: Record<string, string> = {};
    propagation.inject(trace.setSpan(ROOT_CONTEXT, elsewhere), ownHeaders);
    elsewhere.end();
    const caller = telemetry.tracer.startSpan('caller request');
    try {
      await context.with(trace.setSpan(ROOT_CONTEXT, caller), async () => {
        await call(traced, 'publishMessage', { workflowName: name, inlet: PIPELINE.inlet, body, headers: {}, messageId: 'call-single' });
        await call(traced, 'publishMessages', {
          workflowName: name,
          inlet: PIPELINE.inlet,
          messages: [
            { messageId: 'call-batch', body, headers: {} },
            { messageId: 'call-own', body, headers: ownHeaders },
          ],
        });
        const stream = traced.publishStream();
        const answered = once(stream, 'data');
        stream.write({ workflowName: name, inlet: PIPELINE.inlet, messages: [{ messageId: 'call-stream', body, headers: {} }] });
        await answered;
        stream.end();
        await once(stream, 'end');
      });
    } finally {
      caller.end();
      traced.close();
    }
    for (const id of ['call-single', 'call-batch', 'call-own', 'call-stream']) await expect.poll(() => spansOf(id).length, { timeout: 10_000 }).toBe(4);
    await call(harness.executor, 'stopWorkflow', { name });

    const serverSpan = (method: string) =>
      exporter
        .getFinishedSpans()
        .find(
          (span) =>
            span.name === `loom.v1.Executor/${method}` && span.kind === SpanKind.SERVER && span.parentSpanContext?.traceId === caller.spanContext().traceId,
        );
    const single = serverSpan('PublishMessage');
    const batch = serverSpan('PublishMessages');
    const streamed = serverSpan('PublishStream');
    expect(single?.attributes).toMatchObject({ 'loom.workflow.name': name, 'loom.message.id': 'call-single' });
    expect(batch?.attributes).toMatchObject({ 'loom.workflow.name': name, 'loom.message.ids': ['call-batch', 'call-own'], 'loom.message.count': 2 });
    expect(streamed?.attributes).toMatchObject({ 'loom.workflow.name': name, 'loom.message.count': 1 });
    for (const [id, parent] of [
      ['call-single', single],
      ['call-batch', batch],
      ['call-stream', streamed],
    ] as const) {
      const spans = chain(spansOf(id));
      expect(spans.map((span) => span.name)).toEqual(['emit Articles', 'process Clean up', 'process Long enough', 'process Log']);
      expect(spans[0]?.parentSpanContext?.spanId, `${id}: its first span is a child of the call's server span`).toBe(parent?.spanContext().spanId);
      for (const span of spans) expect(span.spanContext().traceId).toBe(caller.spanContext().traceId);
    }
    const own = chain(spansOf('call-own'));
    expect(own[0]?.parentSpanContext?.spanId).toBe(elsewhere.spanContext().spanId);
    for (const span of own) expect(span.spanContext().traceId).toBe(elsewhere.spanContext().traceId);
  });

  it('gives each graph batch a span linked to the spans of the messages in it', async () => {
    const inlet = 'Nodes_8b9c0d1e-2f3a-4b4c-9d5e-6f7a8b9c0d1e';
    const writer = 'Write nodes_9c0d1e2f-3a4b-4c5d-8e6f-7a8b9c0d1e2f';
    const graph = {
      name: 'Embedded graph_0d1e2f3a-4b5c-4d6e-9f7a-8b9c0d1e2f3a',
      resource: findResourceDefinition(RESOURCE_KINDS.AGE_DATABASE)!,
      parameters: { host: 'embedded', user: 'postgres', graph: 'traced_graph' },
    };
    const workflow = workflowOf(
      'Traced writes_1e2f3a4b-5c6d-4e7f-8a9b-0c1d2e3f4a5b',
      [
        instance(COMPONENT_KINDS.INLET, inlet),
        {
          ...instance(COMPONENT_KINDS.GRAPH_DATABASE_WRITER, writer, {
            query: 'CREATE (n:Traced {id: $id})',
            batch_writes: true,
            batch_size: 3,
            aggregation_timeout: 2_000,
          }),
          resource: graph,
        },
      ],
      [[inlet, writer]],
    );
    const put = await call(harness.store, 'putWorkflow', { workflow: workflowToProto(workflow) });
    const name = put.summary?.name ?? '';
    await call(harness.executor, 'startWorkflow', { name });
    await Promise.all(
      ['a', 'b', 'c'].map((id) =>
        call(harness.executor, 'publishMessage', { workflowName: name, inlet, body: { id }, headers: {}, messageId: `batched-${id}` }),
      ),
    );
    const batchSpan = () => exporter.getFinishedSpans().find((span) => span.name === 'graph batch Write nodes');
    await expect.poll(batchSpan, { timeout: 10_000 }).toBeDefined();
    await call(harness.executor, 'stopWorkflow', { name });

    const messageSpans = ['a', 'b', 'c'].map((id) => spansOf(`batched-${id}`).find((span) => span.name === 'process Write nodes'));
    expect(batchSpan()?.attributes).toMatchObject({ 'loom.batch.size': 3, 'loom.component.name': writer });
    expect(
      batchSpan()
        ?.links.map((link) => link.context.spanId)
        .sort(),
    ).toEqual(messageSpans.map((span) => span?.spanContext().spanId).sort());
  });
});
