import { trace, type Tracer } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import { IllegalTransitionError, withResolvers } from '@loom/foundation';
import { createLogger, startTelemetry } from '@loom/telemetry';
import { JsonText, NotFoundError, type SkillDefinition, SkillServer, type SkillLimits, UnprocessableError } from '../src/index.js';

const limits: SkillLimits = { bodyLimitBytes: 4096, concurrency: 2, timeLimitMs: 2000, retryAfterSeconds: 3 };
const servers: SkillServer[] = [];

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.stop()));
});

/** Resolves the returned promise's `release` to let held requests finish. */
function gate(): { wait: Promise<void>; release: () => void; entered: Promise<void>; enter: () => void } {
  const { promise: wait, resolve: release } = withResolvers();
  const { promise: entered, resolve: enter } = withResolvers();
  return { wait, release, entered, enter };
}

function echoSkill(held = gate()): SkillDefinition {
  return {
    name: 'echo',
    title: 'Echo',
    description: 'test skill',
    version: '1.0.0',
    routes: [
      {
        method: 'POST',
        path: '/echo',
        summary: 'echoes',
        body: {
          type: 'object',
          required: ['text'],
          additionalProperties: false,
          properties: {
            text: { type: 'string' },
            items: { type: 'array', items: { type: 'integer' } },
            mode: { type: 'string', enum: ['plain', 'hold', 'fail', 'crash', 'missing', 'slow', 'written', 'text'] },
          },
        },
        response: { type: 'object', properties: { text: { type: 'string' } } },
        errors: [404, 422],
        async handler(request) {
          const body = request.body as { text: string; mode?: string };
          request.logger.info('echo handler');
          if (body.mode === 'hold') {
            held.enter();
            await held.wait;
          }
          if (body.mode === 'slow') await new Promise((resolve) => setTimeout(resolve, 10_000));
          if (body.mode === 'fail') throw new UnprocessableError('cannot_echo', 'cannot echo that', { field: 'text' });
          if (body.mode === 'missing') throw new NotFoundError('unknown_thing', 'no such thing', { field: 'text' });
          if (body.mode === 'crash') throw new TypeError('secret internal detail');
          if (body.mode === 'written') return new JsonText(`{"text":${JSON.stringify(body.text)},"written":true}`);
          if (body.mode === 'text') return { text: request.text };
          return { text: body.text, traceId: trace.getActiveSpan()?.spanContext().traceId };
        },
      },
    ],
    health: () => ({ extra: 'yes' }),
  };
}

async function start(definition: SkillDefinition, options: { limits?: SkillLimits; tracer?: Tracer; deadlineMs?: number } = {}): Promise<SkillServer> {
  const server = new SkillServer(definition, {
    host: '127.0.0.1',
    port: 0,
    limits: options.limits ?? limits,
    shutdownDeadlineMs: options.deadlineMs ?? 5000,
    logger: createLogger({ level: 'silent' }),
    ...(options.tracer === undefined ? {} : { tracer: options.tracer }),
  });
  servers.push(server);
  await server.start();
  return server;
}

function post(server: SkillServer, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${server.url}/echo`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

describe('SkillServer', () => {
  it('answers a valid request, /health, /openapi.json and /metrics', async () => {
    const server = await start(echoSkill());
    const answer = await post(server, { text: 'hi' });
    expect(answer.status).toBe(200);
    expect(await answer.json()).toMatchObject({ text: 'hi' });

    const health = await fetch(`${server.url}/health`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ status: 'UP', skill: 'echo', extra: 'yes', concurrency: 2 });

    const openapi = (await (await fetch(`${server.url}/openapi.json`)).json()) as { openapi: string; info: { title: string }; paths: Record<string, unknown> };
    expect(openapi.openapi).toBe('3.0.3');
    expect(openapi.info.title).toBe('Echo');
    expect(Object.keys(openapi.paths)).toEqual(['/echo']);
    expect(JSON.stringify(openapi.paths['/echo'])).toContain('"422"');

    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    expect(metrics).toContain('http_server_request_duration');
    expect(metrics).toContain('http_route="/echo"');
  });

  it('sends an answer written as JsonText as it is, as JSON', async () => {
    const server = await start(echoSkill());
    const answer = await post(server, { text: 'hi', mode: 'written' });
    expect(answer.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(await answer.text()).toBe('{"text":"hi","written":true}');
  });

  it("gives the handler a JSON body's text as it was read, after the same checks as the parsed body", async () => {
    const server = await start(echoSkill());
    const sent = '{ "mode": "text",\n  "text": "caf\u00e9" }';
    const answer = await post(server, sent);
    expect(await answer.json()).toEqual({ text: sent });

    const poisoned = await post(server, '{"mode":"text","text":"x","__proto__":{"polluted":true}}');
    expect(poisoned.status).toBe(400);
    expect(await poisoned.json()).toMatchObject({ error: 'invalid_request' });
  });

  it('answers schema violations 400 naming the field', async () => {
    const server = await start(echoSkill());
    const missing = await post(server, { items: [1] });
    expect(missing.status).toBe(400);
    expect(await missing.json()).toMatchObject({ error: 'invalid_request', field: 'text' });

    const wrongItem = await post(server, { text: 'x', items: [1, 'two'] });
    expect(await wrongItem.json()).toMatchObject({ error: 'invalid_request', field: 'items[1]' });

    const unknown = await post(server, { text: 'x', colour: 'red' });
    expect(await unknown.json()).toMatchObject({ error: 'invalid_request', field: 'colour' });

    const notJson = await post(server, '{"text":');
    expect(notJson.status).toBe(400);
    expect(await notJson.json()).toMatchObject({ error: 'invalid_request' });
  });

  it('answers 413 for a body over the limit, 415 for a wrong media type, 404 for an unknown path', async () => {
    const server = await start(echoSkill());
    const large = await post(server, { text: 'x'.repeat(10_000) });
    expect(large.status).toBe(413);
    expect(await large.json()).toMatchObject({ error: 'payload_too_large' });

    const text = await fetch(`${server.url}/echo`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'hello' });
    expect(text.status).toBe(415);
    expect(await text.json()).toMatchObject({ error: 'unsupported_media_type' });

    const pdf = await fetch(`${server.url}/echo`, { method: 'POST', headers: { 'content-type': 'application/pdf' }, body: '%PDF-1.4' });
    expect(pdf.status).toBe(415);

    const nowhere = await fetch(`${server.url}/nowhere`, { method: 'POST' });
    expect(nowhere.status).toBe(404);
    expect(await nowhere.json()).toMatchObject({ error: 'not_found' });
  });

  it('maps skill errors to their status and hides unexpected ones', async () => {
    const server = await start(echoSkill());
    const failed = await post(server, { text: 'x', mode: 'fail' });
    expect(failed.status).toBe(422);
    expect(await failed.json()).toEqual({ error: 'cannot_echo', message: 'cannot echo that', field: 'text' });

    const missing = await post(server, { text: 'x', mode: 'missing' });
    expect(missing.status).toBe(404);

    const crashed = await post(server, { text: 'x', mode: 'crash' });
    expect(crashed.status).toBe(500);
    const body = await crashed.text();
    expect(body).not.toContain('secret internal detail');
    expect(JSON.parse(body)).toMatchObject({ error: 'internal' });
  });

  it('answers 503 with Retry-After when full, and serves again once a place is free', async () => {
    const held = gate();
    const server = await start(echoSkill(held), { limits: { ...limits, concurrency: 1 } });
    const first = post(server, { text: 'a', mode: 'hold' });
    await held.entered;
    const refused = await post(server, { text: 'b' });
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('3');
    expect(await refused.json()).toMatchObject({ error: 'busy' });
    // health is never limited
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
    held.release();
    expect((await first).status).toBe(200);
    expect((await post(server, { text: 'c' })).status).toBe(200);
  });

  it('answers 503 when a request passes the time limit', async () => {
    const server = await start(echoSkill(), { limits: { ...limits, timeLimitMs: 200 } });
    const slow = await post(server, { text: 'x', mode: 'slow' });
    expect(slow.status).toBe(503);
    expect(slow.headers.get('retry-after')).toBe('3');
    expect(await slow.json()).toMatchObject({ error: 'time_limit' });
  });

  it('continues the caller trace: the server span is a child of the traceparent', async () => {
    const exporter = new InMemorySpanExporter();
    // as a skill process does: telemetry registered globally, so the handler runs inside the request span
    const telemetry = startTelemetry({ serviceName: 'test', spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const server = await start(echoSkill(), { tracer: telemetry.tracer });
    const traceId = '0af7651916cd43dd8448eb211c80319c';
    const parentId = 'b7ad6b7169203331';
    const answer = await post(server, { text: 'hi' }, { traceparent: `00-${traceId}-${parentId}-01` });
    expect(await answer.json()).toMatchObject({ traceId });
    await server.stop();
    const span = exporter.getFinishedSpans().find((candidate) => candidate.name === 'POST /echo');
    expect(span?.spanContext().traceId).toBe(traceId);
    expect(span?.parentSpanContext?.spanId).toBe(parentId);
    expect(span?.attributes['http.response.status_code']).toBe(200);
    await telemetry.shutdown();
  });

  it('stops gracefully: an in-flight request finishes, stop is idempotent, the port is closed after', async () => {
    const held = gate();
    const server = await start(echoSkill(held));
    const inFlight = post(server, { text: 'a', mode: 'hold' });
    await held.entered;
    const stopped = server.stop();
    expect(server.state).toBe('stopping');
    // a second stop waits for the first: it resolves only once the server is stopped
    const second = server.stop().then(() => server.state);
    held.release();
    expect((await inFlight).status).toBe(200);
    expect(await second).toBe('stopped');
    await stopped;
    await expect(fetch(`${server.url}/health`)).rejects.toThrow();
  });

  it('runs on the shared Lifecycle: starting it twice is an IllegalTransitionError naming the skill, and it keeps running', async () => {
    const server = await start(echoSkill());
    await expect(server.start()).rejects.toThrow(IllegalTransitionError);
    await expect(server.start()).rejects.toThrow('skill server echo: no transition from running to starting');
    expect(server.state).toBe('running');
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
  });

  it('cuts connections still open at the shutdown deadline', async () => {
    const held = gate();
    const server = await start(echoSkill(held), { deadlineMs: 100 });
    const inFlight = post(server, { text: 'a', mode: 'hold' }).then(
      (response) => response.status,
      () => 'cut',
    );
    await held.entered;
    await server.stop();
    expect(await inFlight).toBe('cut');
    held.release();
  });
});
