import * as grpc from '@grpc/grpc-js';
import { context, type SpanContext, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { clientTracingInterceptor, serverTracingInterceptor } from '../src/grpc.js';
import { createLogger, type Logger, SecretRedactor, startTelemetry, type Telemetry } from '../src/index.js';
import { captureStream, clientFor, executorService, secretsService, startServer, stopServer, unary } from './helpers.js';

type Handler = (call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => void;

let telemetry: Telemetry;
let exporter: InMemorySpanExporter;
let redactor: SecretRedactor;
let logs: ReturnType<typeof captureStream>;
let logger: Logger;
const servers: grpc.Server[] = [];
const clients: grpc.Client[] = [];
/** What service B (loom.v1.Secrets) does on DecryptResources; each test sets it. */
let secretsHandler: Handler;
/** The span context active inside each handler, by service. */
let activeInHandler: Record<string, SpanContext | undefined>;

beforeEach(() => {
  exporter = new InMemorySpanExporter();
  redactor = new SecretRedactor();
  telemetry = startTelemetry({ serviceName: 'telemetry-test', spanProcessors: [new SimpleSpanProcessor(exporter)], redactor });
  logs = captureStream();
  logger = createLogger({ level: 'debug', destination: logs.stream, redactor });
  activeInHandler = {};
  secretsHandler = (_call, callback) => callback(null, { resources: { password: 'plain' } });
});

afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  await Promise.all(servers.splice(0).map(stopServer));
  await telemetry.shutdown();
});

/** Starts B (Secrets) and A (Executor, which calls B through a traced client); returns a traced client to A. */
async function startServices(): Promise<grpc.Client> {
  const secrets = await startServer(
    secretsService,
    {
      DecryptResources: ((call, callback) => {
        activeInHandler['secrets'] = trace.getActiveSpan()?.spanContext();
        logger.info('decrypting resources');
        secretsHandler(call, callback);
      }) satisfies Handler,
    },
    [serverTracingInterceptor()],
  );
  servers.push(secrets.server);
  const SecretsClient = clientFor(secretsService, 'Secrets');
  const secretsClient = new SecretsClient(secrets.address, grpc.credentials.createInsecure(), { interceptors: [clientTracingInterceptor()] });
  clients.push(secretsClient);

  const executor = await startServer(
    executorService,
    {
      StartWorkflow: ((call, callback) => {
        activeInHandler['executor'] = trace.getActiveSpan()?.spanContext();
        logger.info({ workflow: call.request }, 'starting workflow');
        unary(secretsClient, secretsService, 'DecryptResources', { workflow: 'w1' }).then(
          () => {
            logger.info('workflow started');
            callback(null, { started: true });
          },
          (error: grpc.ServiceError) => callback(error),
        );
      }) satisfies Handler,
    },
    [serverTracingInterceptor()],
  );
  servers.push(executor.server);
  const ExecutorClient = clientFor(executorService, 'Executor');
  const executorClient = new ExecutorClient(executor.address, grpc.credentials.createInsecure(), { interceptors: [clientTracingInterceptor()] });
  clients.push(executorClient);
  return executorClient;
}

/** The four spans of client → A → B, once all have ended. */
async function callSpans(expectedSpans = 4): Promise<Record<'client' | 'executor' | 'secretsClient' | 'secrets', ReadableSpan>> {
  await expect.poll(() => exporter.getFinishedSpans().length).toBe(expectedSpans);
  const spans = exporter.getFinishedSpans();
  const find = (name: string, kind: SpanKind): ReadableSpan => {
    const span = spans.find((candidate) => candidate.name === name && candidate.kind === kind);
    expect(span, `${SpanKind[kind]} span ${name}`).toBeDefined();
    return span!;
  };
  return {
    client: find('loom.v1.Executor/StartWorkflow', SpanKind.CLIENT),
    executor: find('loom.v1.Executor/StartWorkflow', SpanKind.SERVER),
    secretsClient: find('loom.v1.Secrets/DecryptResources', SpanKind.CLIENT),
    secrets: find('loom.v1.Secrets/DecryptResources', SpanKind.SERVER),
  };
}

describe('gRPC tracing interceptors', () => {
  it('carry one trace from a client through service A to service B, parent by parent', async () => {
    const executorClient = await startServices();

    await expect(unary(executorClient, executorService, 'StartWorkflow', { name: 'w1' })).resolves.toEqual({ started: true });

    const { client, executor, secretsClient, secrets } = await callSpans();
    const traceId = client.spanContext().traceId;
    for (const span of [executor, secretsClient, secrets]) expect(span.spanContext().traceId).toBe(traceId);
    expect(client.parentSpanContext).toBeUndefined();
    expect(executor.parentSpanContext?.spanId).toBe(client.spanContext().spanId);
    expect(secretsClient.parentSpanContext?.spanId).toBe(executor.spanContext().spanId);
    expect(secrets.parentSpanContext?.spanId).toBe(secretsClient.spanContext().spanId);

    expect(secrets.attributes).toMatchObject({
      'rpc.system': 'grpc',
      'rpc.service': 'loom.v1.Secrets',
      'rpc.method': 'DecryptResources',
      'rpc.grpc.status_code': 0,
      'network.peer.address': '127.0.0.1',
    });
    expect(client.attributes).toMatchObject({
      'rpc.system': 'grpc',
      'rpc.service': 'loom.v1.Executor',
      'rpc.method': 'StartWorkflow',
      'rpc.grpc.status_code': 0,
    });
    for (const span of [client, executor, secretsClient, secrets]) expect(span.status.code).toBe(SpanStatusCode.UNSET);
  });

  it('make the server span the active span in the handler, so its log lines carry its ids', async () => {
    const executorClient = await startServices();

    await unary(executorClient, executorService, 'StartWorkflow', { name: 'w1' });

    const { executor, secrets } = await callSpans();
    expect(activeInHandler['executor']?.spanId).toBe(executor.spanContext().spanId);
    expect(activeInHandler['secrets']?.spanId).toBe(secrets.spanContext().spanId);
    const line = (msg: string): Record<string, unknown> | undefined => logs.lines().find((entry) => entry['msg'] === msg);
    expect(line('starting workflow')).toMatchObject({ trace_id: executor.spanContext().traceId, span_id: executor.spanContext().spanId });
    expect(line('decrypting resources')).toMatchObject({ trace_id: secrets.spanContext().traceId, span_id: secrets.spanContext().spanId });
    // after the outgoing call's callback, the handler is still in its own span
    expect(line('workflow started')).toMatchObject({ span_id: executor.spanContext().spanId });
  });

  it('continue the trace of the span active when the call is made, and call back in that context', async () => {
    const executorClient = await startServices();
    const root = telemetry.tracer.startSpan('test request');
    const rootContext = trace.setSpan(context.active(), root);

    const activeInCallback = await context.with(
      rootContext,
      () =>
        new Promise<SpanContext | undefined>((resolve, reject) => {
          const method = executorService['StartWorkflow']!;
          executorClient.makeUnaryRequest(method.path, method.requestSerialize, method.responseDeserialize, { name: 'w1' }, (error) => {
            if (error) reject(error);
            else resolve(trace.getActiveSpan()?.spanContext());
          });
        }),
    );
    root.end();

    expect(activeInCallback?.spanId).toBe(root.spanContext().spanId);
    const { client } = await callSpans(5);
    expect(client.spanContext().traceId).toBe(root.spanContext().traceId);
    expect(client.parentSpanContext?.spanId).toBe(root.spanContext().spanId);
  });

  it('mark every span of a failing call ERROR with rpc.grpc.status_code 5 for NOT_FOUND', async () => {
    secretsHandler = (_call, callback) => callback({ code: grpc.status.NOT_FOUND, details: 'variable db-password not found' });
    const executorClient = await startServices();

    await expect(unary(executorClient, executorService, 'StartWorkflow', { name: 'w1' })).rejects.toMatchObject({ code: grpc.status.NOT_FOUND });

    const spans = await callSpans();
    for (const span of Object.values(spans)) {
      expect(span.status.code, span.name).toBe(SpanStatusCode.ERROR);
      expect(span.status.message).toContain('NOT_FOUND');
      expect(span.attributes['rpc.grpc.status_code']).toBe(5);
    }
  });
});

describe('redaction of registered secrets', () => {
  const plainSecret = 'tok-3f9c2a7e51';
  // quotes and a backslash: in a JSON line this secret only appears escaped
  const escapedSecret = 'pa"ss\\w0rd';

  it('keeps secrets out of log lines, logged errors, span attributes, events and statuses', async () => {
    redactor.add(plainSecret);
    redactor.add(escapedSecret);
    secretsHandler = (_call, callback) => {
      const span = trace.getActiveSpan()!;
      span.setAttribute('loom.variable.value', plainSecret);
      span.setAttribute('loom.variable.values', [escapedSecret, 'harmless']);
      span.addEvent('decrypted', { value: `${plainSecret} and ${escapedSecret}` });
      span.recordException(new Error(`cannot use ${escapedSecret}`));
      logger.info({ value: plainSecret, nested: { list: [escapedSecret] } }, `decrypted ${plainSecret}`);
      logger.error({ err: new Error(`bad secret ${plainSecret} / ${escapedSecret}`) }, 'decrypt failed');
      logger.child({ token: plainSecret }).warn('bound field');
      callback({ code: grpc.status.NOT_FOUND, details: `no variable with value ${plainSecret}` });
    };
    const executorClient = await startServices();

    await expect(unary(executorClient, executorService, 'StartWorkflow', { name: 'w1' })).rejects.toMatchObject({ code: grpc.status.NOT_FOUND });

    const logText = logs.text();
    expect(logs.lines().length).toBeGreaterThanOrEqual(4);
    const errorLine = logs.lines().find((line) => line['msg'] === 'decrypt failed');
    expect(errorLine?.['err']).toMatchObject({ message: 'bad secret [REDACTED] / [REDACTED]' });
    expect((errorLine?.['err'] as { stack: string }).stack).toContain('[REDACTED]');
    expect(logs.lines().find((line) => line['msg'] === 'bound field')).toMatchObject({ token: '[REDACTED]' });

    const spans = await callSpans();
    const spanText = JSON.stringify(
      Object.values(spans).map((span) => ({ name: span.name, attributes: span.attributes, events: span.events, status: span.status })),
    );
    expect(spans.secrets.attributes).toMatchObject({ 'loom.variable.value': '[REDACTED]', 'loom.variable.values': ['[REDACTED]', 'harmless'] });
    expect(spans.secrets.status.message).toBe('NOT_FOUND: no variable with value [REDACTED]');

    for (const text of [logText, spanText]) {
      expect(text).toContain('[REDACTED]');
      expect(text).not.toContain(plainSecret);
      expect(text).not.toContain(escapedSecret);
      expect(text).not.toContain(JSON.stringify(escapedSecret).slice(1, -1));
    }
  });
});
