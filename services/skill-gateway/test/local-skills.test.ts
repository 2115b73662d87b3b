import { status } from '@grpc/grpc-js';
import { type Skill } from '@loom/domain';
import { capturedLogger } from '@loom/service-kit/testing';
import { type SkillDefinition, type SkillRequest, SkillServer } from '@loom/skill-service-kit';
import { startTelemetry, type Telemetry } from '@loom/telemetry';
import { SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type CallPolicy, SkillCaller } from '../src/index.js';

/**
 * A skill served by the gateway's own process (`loom serve --with-skills`) is posted to in memory (SkillServer.post):
 * the same answers, limits, error bodies, trace and deadline as over its socket, which the same server also answers.
 * One real skill server on 127.0.0.1:0, called both ways.
 */
const exporter = new InMemorySpanExporter();
let telemetry: Telemetry;
let server: SkillServer;
let skill: Skill;
const seen: { body: unknown; traceId: string; aborted?: unknown }[] = [];
const { logger, lines } = capturedLogger();
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';

const definition: SkillDefinition = {
  name: 'echo',
  title: 'Echo',
  description: 'answers what it was sent',
  version: '1.0.0',
  routes: [
    {
      method: 'POST',
      path: '/v2/annotate',
      summary: 'echo',
      body: { type: 'object', required: ['text'], properties: { text: { type: 'string', maxLength: 20 }, pipeline: { type: 'string', default: 'default' } } },
      response: { type: 'object' },
      async handler(request: SkillRequest) {
        const entry: (typeof seen)[number] = { body: request.body, traceId: request.span.spanContext().traceId };
        seen.push(entry);
        if ((request.body as { text: string }).text === 'wait') {
          // holds the call until the caller's deadline aborts it
          await new Promise((resolve) => request.signal.addEventListener('abort', resolve, { once: true }));
          entry.aborted = (request.signal.reason as { code?: string }).code;
        }
        return { echo: request.body };
      },
    },
  ],
};

const policy = (timeoutMs: number): CallPolicy => ({
  timeoutMs: () => timeoutMs,
  maxConcurrency: () => 4,
  retries: 0,
  backoff: { initialMs: 1, maxMs: 1 },
  breaker: { failureThreshold: 100, openMs: 60_000 },
});

beforeAll(async () => {
  telemetry = startTelemetry({ serviceName: 'loom-skill-gateway-test', spanProcessors: [new SimpleSpanProcessor(exporter)] });
  server = new SkillServer(definition, {
    host: '127.0.0.1',
    port: 0,
    limits: { bodyLimitBytes: 200, concurrency: 4, timeLimitMs: 10_000, retryAfterSeconds: 1 },
    shutdownDeadlineMs: 1000,
    logger,
  });
  await server.start();
  skill = { name: 'echo', url: `${server.url}/v2/annotate`, capability: 'ENTITY_EXTRACTION', version: 'v2' };
});

afterAll(async () => {
  await server.stop();
  await telemetry.shutdown();
});

beforeEach(() => {
  exporter.reset();
  seen.length = 0;
});

/** A caller over HTTP and one that finds the server in this process. */
function callers(timeoutMs = 5000): { http: SkillCaller; local: SkillCaller } {
  return {
    http: new SkillCaller(policy(timeoutMs), logger),
    local: new SkillCaller(policy(timeoutMs), logger, Date.now, (origin) => (origin === new URL(server.url).origin ? server : undefined)),
  };
}

const spanOf = (kind: SpanKind): ReadableSpan => {
  const span = exporter.getFinishedSpans().find((each) => each.kind === kind);
  if (span === undefined) throw new TypeError(`no ${SpanKind[kind]} span`);
  return span;
};

describe('a skill of the same process, in memory', () => {
  it('answers as over HTTP, continues the caller’s trace, and says inproc on both spans and in the log', async () => {
    const { http, local } = callers();
    const body = Buffer.from(JSON.stringify({ text: 'hello' }));
    const traceHeaders = { traceparent: `00-${TRACE_ID}-00f067aa0ba902b7-01` };
    const overHttp = await http.call(skill, { body, traceHeaders }, AbortSignal.timeout(5000));
    exporter.reset();
    const inMemory = await local.call(skill, { body, traceHeaders }, AbortSignal.timeout(5000));

    for (const result of [overHttp, inMemory]) {
      expect(result.code).toBe(status.OK);
      // the schema's default filled in, as fastify does over the socket
      expect(JSON.parse(Buffer.from(result.body).toString())).toEqual({ echo: { text: 'hello', pipeline: 'default' } });
      expect(result.contentType).toBe('application/json; charset=utf-8');
    }
    expect(seen.map((entry) => entry.traceId)).toEqual([TRACE_ID, TRACE_ID]);
    const client = spanOf(SpanKind.CLIENT);
    const handled = spanOf(SpanKind.SERVER);
    expect(client.attributes['network.transport']).toBe('inproc');
    expect(handled.attributes['network.transport']).toBe('inproc');
    expect(handled.parentSpanContext?.spanId).toBe(client.spanContext().spanId);
    expect(handled.spanContext().traceId).toBe(TRACE_ID);
    expect(handled.attributes['http.response.status_code']).toBe(200);
    const requests = lines.map((line) => JSON.parse(line) as { msg: string; inProcess?: boolean; status?: number }).filter((line) => line.msg === 'request');
    expect(requests.slice(-2).map((line) => [line.status, line.inProcess])).toEqual([
      [200, undefined],
      [200, true],
    ]);
    http.close();
    local.close();
  });

  it('refuses what HTTP refuses, with the same status and error body', async () => {
    const { http, local } = callers();
    const cases: { body: string; contentType?: string }[] = [
      { body: JSON.stringify({ text: 'far too long for the schema of this route' }) },
      { body: JSON.stringify({ pipeline: 'default' }) },
      { body: '{"text": ' },
      { body: '' },
      { body: JSON.stringify({ text: 'x'.repeat(300) }) },
      { body: 'hello', contentType: 'text/plain' },
      { body: '{"__proto__": {"x": 1}, "text": "a"}' },
    ];
    for (const { body, contentType } of cases) {
      const request = { body: Buffer.from(body), ...(contentType === undefined ? {} : { contentType }) };
      const overHttp = await http.call(skill, request, AbortSignal.timeout(5000));
      const inMemory = await local.call(skill, request, AbortSignal.timeout(5000));
      expect([inMemory.code, inMemory.httpStatus, inMemory.message], body).toEqual([overHttp.code, overHttp.httpStatus, overHttp.message]);
      expect(JSON.parse(Buffer.from(inMemory.body).toString()), body).toEqual(JSON.parse(Buffer.from(overHttp.body).toString()));
    }
    expect(seen).toEqual([]);
    http.close();
    local.close();
  });

  it('ends at the caller’s deadline as over HTTP: DEADLINE_EXCEEDED, and the handler’s signal aborted as when the connection closes', async () => {
    const { local } = callers(100);
    const result = await local.call(skill, { body: Buffer.from(JSON.stringify({ text: 'wait' })) }, AbortSignal.timeout(5000));
    expect(result.code).toBe(status.DEADLINE_EXCEEDED);
    expect(result.cause).toBe('timed out');
    await expect.poll(() => seen[0]?.aborted).toBe('client_gone');
    expect(spanOf(SpanKind.SERVER).attributes['http.response.status_code']).toBe(499);
    local.close();
  });
});
