import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { SecretRedactor, startTelemetry, type Telemetry } from '../src/index.js';

interface Received {
  path: string;
  contentType: string | undefined;
  body: string;
}

let collector: Server | undefined;
let telemetry: Telemetry | undefined;

afterEach(async () => {
  await telemetry?.shutdown();
  telemetry = undefined;
  await new Promise<void>((resolve) => (collector ? collector.close(() => resolve()) : resolve()));
  collector = undefined;
});

/** A fake OTLP/HTTP collector on loopback that keeps every request it gets. */
async function startCollector(): Promise<{ url: string; received: Received[] }> {
  const received: Received[] = [];
  collector = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      received.push({ path: request.url ?? '', contentType: request.headers['content-type'], body: Buffer.concat(chunks).toString('utf8') });
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end('{}');
    });
  });
  await new Promise<void>((resolve) => collector!.listen(0, '127.0.0.1', resolve));
  const { port } = collector.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/`, received };
}

describe('OTLP/HTTP export', () => {
  it('sends redacted spans to /v1/traces and metrics to /v1/metrics, flushed on shutdown', async () => {
    const { url, received } = await startCollector();
    const redactor = new SecretRedactor();
    redactor.add('otlp-s3cret-value');
    telemetry = startTelemetry({ serviceName: 'otlp-test', otlpEndpoint: url, redactor });

    const span = telemetry.tracer.startSpan('decrypt');
    span.setAttribute('loom.value', 'otlp-s3cret-value');
    span.end();
    telemetry.meter.createCounter('loom.test.events').add(3);
    await telemetry.shutdown();

    const traces = received.find((request) => request.path === '/v1/traces');
    expect(traces?.contentType).toBe('application/json');
    expect(traces?.body).toContain('"otlp-test"');
    expect(traces?.body).toContain('[REDACTED]');
    expect(traces?.body).not.toContain('otlp-s3cret-value');
    const metricsRequest = received.find((request) => request.path === '/v1/metrics');
    expect(metricsRequest?.body).toContain('loom.test.events');
  });
});
