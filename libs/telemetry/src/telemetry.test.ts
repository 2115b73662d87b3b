import { context, metrics, propagation, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import { TelemetryAlreadyRegisteredError, TelemetryConfigError } from './errors.js';
import { SecretRedactor } from './secret-redactor.js';
import { startTelemetry, type Telemetry, type TelemetryOptions } from './telemetry.js';

const started: Telemetry[] = [];
afterEach(async () => {
  for (const telemetry of started.splice(0)) await telemetry.shutdown();
});

function start(options: TelemetryOptions): Telemetry {
  const telemetry = startTelemetry(options);
  started.push(telemetry);
  return telemetry;
}

describe('startTelemetry', () => {
  it.each([
    [{ serviceName: ' ' }, 'serviceName'],
    [{ serviceName: 'x', samplingRatio: 1.5 }, 'samplingRatio'],
    [{ serviceName: 'x', samplingRatio: Number.NaN }, 'samplingRatio'],
    [{ serviceName: 'x', prometheusPort: -1 }, 'prometheusPort'],
    [{ serviceName: 'x', prometheusPort: 70000 }, 'prometheusPort'],
    [{ serviceName: 'x', prometheusPort: 1.5 }, 'prometheusPort'],
    [{ serviceName: 'x', otlpEndpoint: 'not a url' }, 'otlpEndpoint'],
    [{ serviceName: 'x', otlpEndpoint: 'ftp://collector:4318' }, 'otlpEndpoint'],
  ] satisfies [TelemetryOptions, string][])('rejects %o naming %s', (options, key) => {
    expect(() => startTelemetry(options)).toThrow(TelemetryConfigError);
    expect(() => startTelemetry(options)).toThrow(expect.objectContaining({ key }) as Error);
  });

  it('registers the globals and releases them on shutdown, so it can start again', async () => {
    const firstExporter = new InMemorySpanExporter();
    const first = startTelemetry({ serviceName: 'first', spanProcessors: [new SimpleSpanProcessor(firstExporter)] });
    trace.getTracer('t').startActiveSpan('one', (span) => {
      expect(propagation.fields()).toEqual(expect.arrayContaining(['traceparent', 'tracestate', 'baggage']));
      expect(trace.getActiveSpan()).toBe(span);
      span.end();
    });
    expect(metrics.getMeterProvider()).toBe(first.meterProvider);
    expect(firstExporter.getFinishedSpans().map((span) => [span.name, span.resource.attributes['service.name']])).toEqual([['one', 'first']]);
    await first.shutdown();
    await first.shutdown();

    expect(propagation.fields()).toEqual([]);
    expect(metrics.getMeterProvider()).not.toBe(first.meterProvider);
    expect(
      context.with(trace.setSpan(context.active(), trace.wrapSpanContext({ traceId: '1'.repeat(32), spanId: '2'.repeat(16), traceFlags: 1 })), () =>
        trace.getActiveSpan(),
      ),
    ).toBeUndefined();

    const secondExporter = new InMemorySpanExporter();
    const second = start({ serviceName: 'second', spanProcessors: [new SimpleSpanProcessor(secondExporter)] });
    trace.getTracer('t').startSpan('two').end();
    expect(secondExporter.getFinishedSpans().map((span) => [span.name, span.resource.attributes['service.name']])).toEqual([['two', 'second']]);
    expect(metrics.getMeterProvider()).toBe(second.meterProvider);
  });

  it('refuses to register over an instance that still holds the globals', () => {
    start({ serviceName: 'holder' });
    expect(() => startTelemetry({ serviceName: 'intruder' })).toThrow(TelemetryAlreadyRegisteredError);
    start({ serviceName: 'private', register: false });
  });

  it('leaves the globals alone when register is false', () => {
    const exporter = new InMemorySpanExporter();
    const telemetry = start({ serviceName: 'private', register: false, spanProcessors: [new SimpleSpanProcessor(exporter)] });
    trace.getTracer('t').startSpan('global').end();
    telemetry.tracer.startSpan('own').end();
    expect(exporter.getFinishedSpans().map((span) => span.name)).toEqual(['own']);
    expect(propagation.fields()).toEqual([]);
  });

  it('samples new traces by ratio: 0 records none', () => {
    const exporter = new InMemorySpanExporter();
    const telemetry = start({ serviceName: 'sampled', samplingRatio: 0, spanProcessors: [new SimpleSpanProcessor(exporter)] });
    telemetry.tracer.startSpan('dropped').end();
    expect(exporter.getFinishedSpans()).toEqual([]);
  });

  it('records no span when nothing would receive it, but still makes and propagates ids (unsampled)', () => {
    const telemetry = start({ serviceName: 'nowhere' });
    const span = telemetry.tracer.startSpan('work');
    expect(span.isRecording()).toBe(false);
    expect(span.spanContext().traceId).toMatch(/^[0-9a-f]{32}$/);
    const carrier: Record<string, string> = {};
    propagation.inject(trace.setSpan(context.active(), span), carrier);
    expect(carrier['traceparent']).toBe(`00-${span.spanContext().traceId}-${span.spanContext().spanId}-00`);
    span.end();
  });

  it('redacts span names, attributes, events, links and status with the process redactor unless given one', () => {
    const exporter = new InMemorySpanExporter();
    const redactor = new SecretRedactor();
    const telemetry = start({ serviceName: 'redacting', redactor, spanProcessors: [new SimpleSpanProcessor(exporter)] });
    redactor.add('k3y-material');
    const span = telemetry.tracer.startSpan('load k3y-material', {
      links: [{ context: { traceId: '1'.repeat(32), spanId: '2'.repeat(16), traceFlags: 1 }, attributes: { why: 'k3y-material' } }],
    });
    span.setAttributes({ plain: 'k3y-material', number: 4, list: ['k3y-material', 'ok'] });
    span.addEvent('got k3y-material', { detail: 'k3y-material!' });
    span.setStatus({ code: 2, message: 'lost k3y-material' });
    span.end();
    const [exported] = exporter.getFinishedSpans();
    expect(exported?.name).toBe('load [REDACTED]');
    expect(exported?.attributes).toEqual({ plain: '[REDACTED]', number: 4, list: ['[REDACTED]', 'ok'] });
    expect(exported?.events[0]).toMatchObject({ name: 'got [REDACTED]', attributes: { detail: '[REDACTED]!' } });
    expect(exported?.links[0]?.attributes).toEqual({ why: '[REDACTED]' });
    expect(exported?.status.message).toBe('lost [REDACTED]');
  });
});
