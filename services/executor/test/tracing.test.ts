import { workflowToProto } from '@loom/domain';
import { call } from '@loom/service-kit';
import { startTelemetry, type Telemetry } from '@loom/telemetry';
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ExecutorHarness, PIPELINE, pipelineWorkflow, startExecutor } from './harness.js';

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

function spansOf(messageId: string): ReadableSpan[] {
  return exporter.getFinishedSpans().filter((span) => span.attributes['loom.message.id'] === messageId);
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

    const passing = await call(harness.executor, 'publishMessage', {
      workflowName: name,
      inlet: PIPELINE.inlet,
      body: { title: 'graphs', text: 'a long enough article text' },
      headers: {},
      messageId: 'message-passing',
    });
    const filtered = await call(harness.executor, 'publishMessage', {
      workflowName: name,
      inlet: PIPELINE.inlet,
      body: { title: 'short', text: 'too short' },
      headers: {},
      messageId: 'message-filtered',
    });

    // a caller that traces its request: the message joins the caller's trace
    const caller = telemetry.tracer.startSpan('caller request');
    const carrier: Record<string, string> = {};
    propagation.inject(trace.setSpan(ROOT_CONTEXT, caller), carrier);
    await context.with(trace.setSpan(context.active(), caller), () =>
      call(harness.executor, 'publishMessage', {
        workflowName: name,
        inlet: PIPELINE.inlet,
        body: { title: 'traced', text: 'an article the caller traces' },
        headers: carrier,
        messageId: 'message-of-caller',
      }),
    );
    caller.end();

    await expect.poll(() => spansOf('message-passing').length, { timeout: 10_000 }).toBe(4);
    await expect.poll(() => spansOf('message-of-caller').length, { timeout: 10_000 }).toBe(4);
    await call(harness.executor, 'stopWorkflow', { name });

    const run = exporter.getFinishedSpans().find((span) => span.name === `workflow ${pipelineWorkflow().name}`);
    expect(run, 'the run span, ended at stop').toBeDefined();
    expect(run?.parentSpanContext).toBeUndefined();
    expect(run?.attributes).toMatchObject({ 'loom.workflow.name': pipelineWorkflow().name, 'loom.run.state': 'STOPPED' });
    // the run links to the StartWorkflow request that began it
    const startRpc = exporter.getFinishedSpans().find((span) => span.name === 'loom.v1.Executor/StartWorkflow' && span.kind === SpanKind.SERVER);
    expect(run?.links.map((link) => link.context.spanId)).toEqual([startRpc?.spanContext().spanId]);

    const ofPassing = chain(spansOf(passing.messageId));
    expect(ofPassing.map((span) => span.name)).toEqual([
      `emit ${PIPELINE.inlet}`,
      `process ${PIPELINE.transformer}`,
      `process ${PIPELINE.filter}`,
      `process ${PIPELINE.sink}`,
    ]);
    expect(ofPassing[0]?.parentSpanContext?.spanId).toBe(run?.spanContext().spanId);
    for (const span of ofPassing) expect(span.spanContext().traceId).toBe(run?.spanContext().traceId);

    // filtered out by the filter: its chain ends there, without an error
    const ofFiltered = chain(spansOf(filtered.messageId));
    expect(ofFiltered.map((span) => span.name)).toEqual([`emit ${PIPELINE.inlet}`, `process ${PIPELINE.transformer}`, `process ${PIPELINE.filter}`]);
    expect(ofFiltered.every((span) => span.status.code !== SpanStatusCode.ERROR)).toBe(true);

    const ofCaller = chain(spansOf('message-of-caller'));
    expect(ofCaller).toHaveLength(4);
    expect(ofCaller[0]?.parentSpanContext?.spanId).toBe(caller.spanContext().spanId);
    for (const span of ofCaller) expect(span.spanContext().traceId).toBe(caller.spanContext().traceId);
    expect(ofCaller[0]?.links.map((link) => link.context.spanId)).toEqual([run?.spanContext().spanId]);
  });
});
