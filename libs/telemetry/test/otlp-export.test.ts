import { type OtlpReceiver, startOtlpReceiver } from '@loom/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { SecretRedactor, startTelemetry, type Telemetry } from '../src/index.js';

let receiver: OtlpReceiver | undefined;
let telemetry: Telemetry | undefined;

afterEach(async () => {
  await telemetry?.shutdown();
  telemetry = undefined;
  await receiver?.close();
  receiver = undefined;
});

describe('OTLP/HTTP export', () => {
  it('sends redacted spans to /v1/traces and metrics to /v1/metrics, flushed on shutdown', async () => {
    receiver = await startOtlpReceiver();
    const redactor = new SecretRedactor();
    redactor.add('otlp-s3cret-value');
    telemetry = startTelemetry({ serviceName: 'otlp-test', otlpEndpoint: receiver.url, redactor });

    const span = telemetry.tracer.startSpan('decrypt');
    span.setAttribute('loom.value', 'otlp-s3cret-value');
    span.end();
    telemetry.meter.createCounter('loom.test.events').add(3);
    await telemetry.shutdown();

    // the receiver takes OTLP/JSON only: a span it decoded came in that encoding
    expect(receiver.refused).toEqual([]);
    expect(receiver.spans()).toEqual([expect.objectContaining({ service: 'otlp-test', name: 'decrypt', attributes: { 'loom.value': '[REDACTED]' } })]);
    expect(JSON.stringify(receiver.spans())).not.toContain('otlp-s3cret-value');
    expect(receiver.metrics()).toContainEqual({ service: 'otlp-test', name: 'loom.test.events' });
  });
});
