import { status } from '@grpc/grpc-js';
import { type Skill, SkillCapability } from '@loom/contracts';
import { call } from '@loom/service-kit';
import { failure, type FakeSkill, startFakeSkill } from '@loom/service-kit/testing';
import { startTelemetry, type Telemetry } from '@loom/telemetry';
import { SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type GatewayHarness, startGateway } from './harness.js';

const exporter = new InMemorySpanExporter();
let telemetry: Telemetry;
let gateway: GatewayHarness;
let fake: FakeSkill;
// the clock the circuits read: a test moves it past the open time instead of waiting for it
let clockMs = 0;
const OPEN_MS = 60_000;

const entities = (origin: string, name = 'nlp'): Skill => ({
  name,
  url: `${origin}/v2/annotate`,
  capability: SkillCapability.SKILL_CAPABILITY_ENTITY_EXTRACTION,
  pipeline: 'default',
  version: 'v2',
});
const json = (value: unknown) => Buffer.from(JSON.stringify(value));

beforeAll(async () => {
  telemetry = startTelemetry({ serviceName: 'loom-skill-gateway-test', spanProcessors: [new SimpleSpanProcessor(exporter)] });
  fake = await startFakeSkill(() => ({ status: 200, body: {} }));
  gateway = await startGateway(
    [
      'loom.skills.retries=2',
      'loom.skills.backoff.initialMs=5',
      'loom.skills.backoff.maxMs=20',
      'loom.skills.breaker.failureThreshold=4',
      `loom.skills.breaker.openMs=${OPEN_MS}`,
      'loom.skills.timeouts.slow=150',
      'loom.skills.concurrency.capped=3',
      'loom.skills.registry.cacheMs=0',
    ],
    { now: () => clockMs },
  );
  for (const name of ['nlp', 'slow', 'capped', 'fragile']) await call(gateway.client, 'registerSkill', { skill: entities(fake.origin, name), replace: false });
});

afterAll(async () => {
  await gateway.stop();
  await fake.close();
  await telemetry.shutdown();
});

beforeEach(() => {
  fake.requests.length = 0;
  exporter.reset();
});

describe('InvokeSkill', () => {
  it('posts the input as JSON and answers the skill’s JSON, with one client span carrying the skill name and its traceparent', async () => {
    fake.answerWith((request) => ({ status: 200, body: { sentences: [], echo: JSON.parse(request.body.toString()) as unknown } }));
    const answer = await call(gateway.client, 'invokeSkill', { skillName: 'nlp', input: { text: 'Ben Goodger', pipeline: 'default' } });
    expect(answer.output).toEqual({ sentences: [], echo: { text: 'Ben Goodger', pipeline: 'default' } });
    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0]).toMatchObject({ method: 'POST', path: '/v2/annotate' });
    const [span] = exporter.getFinishedSpans().filter((candidate) => candidate.kind === SpanKind.CLIENT && candidate.name === 'POST /v2/annotate');
    expect(span?.attributes).toMatchObject({
      'loom.skill.name': 'nlp',
      'http.request.method': 'POST',
      'http.response.status_code': 200,
      'server.address': '127.0.0.1',
    });
    expect(fake.requests[0]?.headers.traceparent).toContain(span?.spanContext().spanId);
  });

  it('retries 503 with backoff and succeeds; never retries another 4xx or a 3xx, which is INVALID_ARGUMENT with the skill’s message', async () => {
    let calls = 0;
    fake.answerWith(() => (++calls < 3 ? { status: 503, body: { error: 'busy' } } : { status: 200, body: ['k'] }));
    const answer = await call(gateway.client, 'invokeSkill', { skillName: 'nlp', input: {} });
    expect(answer.answer).toEqual(['k']);
    expect(fake.requests).toHaveLength(3);

    fake.requests.length = 0;
    fake.answerWith(() => ({ status: 404, body: { error: 'NOT_FOUND', message: "unknown pipeline 'nope'", field: 'pipeline' } }));
    const refused = await failure(call(gateway.client, 'invokeSkill', { skillName: 'nlp', input: {} }));
    expect(refused.code).toBe(status.INVALID_ARGUMENT);
    expect(refused.details).toContain("unknown pipeline 'nope' (field pipeline)");
    expect(fake.requests).toHaveLength(1);

    // a redirect is not followed (a skill's url is its endpoint): refused like a 4xx, sent once
    fake.requests.length = 0;
    fake.answerWith(() => ({ status: 308, body: { message: 'moved' } }));
    const moved = await failure(call(gateway.client, 'invokeSkill', { skillName: 'nlp', input: {} }));
    expect(moved.code).toBe(status.INVALID_ARGUMENT);
    expect(moved.details).toContain('HTTP 308: moved');
    expect(fake.requests).toHaveLength(1);
  });

  it('gives up on a hanging skill after its time-out per attempt: DEADLINE_EXCEEDED after the retries', async () => {
    fake.answerWith(() => 'hang');
    const late = await failure(call(gateway.client, 'invokeSkill', { skillName: 'slow', input: {} }));
    expect(late.code).toBe(status.DEADLINE_EXCEEDED);
    expect(late.details).toContain('within 150 ms after 3 attempts');
    expect(fake.requests).toHaveLength(3);
  });

  it('opens the circuit after consecutive failures (calls stop reaching the skill), probes after the open time and closes on success', async () => {
    fake.answerWith(() => ({ status: 500, body: { error: 'down' } }));
    const first = await failure(call(gateway.client, 'invokeSkill', { skillName: 'fragile', input: {} }));
    expect(first.code).toBe(status.UNAVAILABLE);
    expect(fake.requests).toHaveLength(3);
    const second = await failure(call(gateway.client, 'invokeSkill', { skillName: 'fragile', input: {} }));
    expect(second.details).toContain('circuit is open');
    expect(fake.requests).toHaveLength(4); // the fourth consecutive failure opened it
    expect((await call(gateway.client, 'checkSkill', { name: 'fragile' })).circuitState).toBe(2);
    await failure(call(gateway.client, 'invokeSkill', { skillName: 'fragile', input: {} }));
    expect(fake.requests.filter((request) => request.method === 'POST')).toHaveLength(4);

    fake.answerWith(() => ({ status: 200, body: { ok: true } }));
    clockMs += OPEN_MS - 1;
    await failure(call(gateway.client, 'invokeSkill', { skillName: 'fragile', input: {} }));
    expect(fake.requests.filter((request) => request.method === 'POST')).toHaveLength(4);
    clockMs += 1;
    expect((await call(gateway.client, 'invokeSkill', { skillName: 'fragile', input: {} })).output).toEqual({ ok: true });
    expect((await call(gateway.client, 'checkSkill', { name: 'fragile' })).circuitState).toBe(1);
  });
});

describe('InvokeSkillBatch', () => {
  it('runs a batch’s calls concurrently within the cap, one result per request in order, a failure failing only its own, without a listener warning', async () => {
    fake.answerWith(async (request) => {
      const { n } = JSON.parse(request.body.toString()) as { n: number };
      await new Promise((resolve) => setTimeout(resolve, 20));
      return n === 7 ? { status: 422, body: { message: 'seven is not text' } } : { status: 200, body: { n } };
    });
    const requests = Array.from({ length: 20 }, (_, n) => ({ body: json({ n }), contentType: '', traceHeaders: {}, path: '' }));
    const warnings: Error[] = [];
    const onWarning = (warning: Error): void => void warnings.push(warning);
    process.on('warning', onWarning);
    const { results } = await call(gateway.client, 'invokeSkillBatch', { skillName: 'capped', requests }).finally(async () => {
      await new Promise((resolve) => setImmediate(resolve));
      process.off('warning', onWarning);
    });
    // twenty requests waiting on one call's cancellation is by design, not a listener leak to warn about
    expect(warnings.map((warning) => warning.name)).not.toContain('MaxListenersExceededWarning');
    expect(results.map((result) => result.code)).toEqual(requests.map((_, n) => (n === 7 ? status.INVALID_ARGUMENT : status.OK)));
    expect(results.map((result) => (result.code === Number(status.OK) ? (JSON.parse(result.body.toString()) as { n: number }).n : -1))).toEqual(
      requests.map((_, n) => (n === 7 ? -1 : n)),
    );
    expect(results[7]?.message).toContain('seven is not text');
    expect(fake.maxInFlight).toBeLessThanOrEqual(3);
    expect((await call(gateway.client, 'checkSkill', { name: 'capped' })).maxConcurrency).toBe(3);
  });

  it('types each failed result: a refusal (4xx) is invalid-argument for good, a 5xx past the retries unavailable and retryable', async () => {
    await call(gateway.client, 'registerSkill', { skill: entities(fake.origin, 'typed'), replace: false });
    fake.answerWith((request) => {
      const { n } = JSON.parse(request.body.toString()) as { n: number };
      if (n === 0) return { status: 400, body: { error: 'INVALID_ARGUMENT', message: 'text is empty' } };
      return n === 1 ? { status: 503, body: { error: 'overloaded' } } : { status: 200, body: { n } };
    });
    const requests = [0, 1, 2].map((n) => ({ body: json({ n }), contentType: '', traceHeaders: {}, path: '' }));
    const { results } = await call(gateway.client, 'invokeSkillBatch', { skillName: 'typed', requests });
    expect(results.map((result) => [result.code, result.failure])).toEqual([
      [
        status.INVALID_ARGUMENT,
        { kind: 'invalid-argument', retryable: false, message: "skill 'typed' refused the request: HTTP 400: text is empty", cause: 'HTTP 400: text is empty' },
      ],
      [
        status.UNAVAILABLE,
        { kind: 'unavailable', retryable: true, message: "skill 'typed' is unavailable after 3 attempts: HTTP 503: overloaded", cause: 'HTTP 503: overloaded' },
      ],
      [status.OK, undefined],
    ]);
    // each failure's message is the result's own
    expect(results.map((result) => result.failure?.message ?? '')).toEqual(results.map((result) => result.message));
  });

  it('calls a skill given in full without registering it, and refuses one given by an unknown name', async () => {
    fake.answerWith(() => ({ status: 200, body: { given: true } }));
    const { results } = await call(gateway.client, 'invokeSkillBatch', {
      skillName: '',
      skill: entities(fake.origin, 'from a workflow file'),
      requests: [{ body: json({}), contentType: '', traceHeaders: {}, path: '' }],
    });
    expect(results[0]?.code).toBe(status.OK);
    const unknown = await failure(call(gateway.client, 'invokeSkillBatch', { skillName: 'nobody', requests: [] }));
    expect(unknown.code).toBe(status.INVALID_ARGUMENT);
    expect(unknown.details).toContain("no skill is registered as 'nobody'");
  });
});

describe('CreatePipeline and CheckSkill', () => {
  it('posts the pipeline to /pipeline/new beside the annotation endpoint and answers the skill’s answer', async () => {
    fake.answerWith(() => ({ status: 201, body: { name: 'tech', created: true } }));
    const created = await call(gateway.client, 'createPipeline', {
      skillName: 'nlp',
      pipeline: { name: 'tech', language: 'en', textProcessor: 'loom', annotators: ['tokenize', 'ner'], nerRegexFiles: ['technology.tsv'] },
    });
    expect(created.response).toEqual({ name: 'tech', created: true });
    expect(fake.requests[0]?.path).toBe('/pipeline/new');
    expect(JSON.parse(fake.requests[0]?.body.toString() ?? '')).toEqual({
      name: 'tech',
      language: 'en',
      textProcessor: 'loom',
      annotators: ['tokenize', 'ner'],
      nerRegexFiles: ['technology.tsv'],
    });
  });

  it('reports reachability, latency and circuit state', async () => {
    fake.answerWith(() => ({ status: 200, body: { status: 'UP' } }));
    const checked = await call(gateway.client, 'checkSkill', { name: 'nlp' });
    expect(checked).toMatchObject({ reachable: true, httpStatus: 200, circuitState: 1 });
    expect(fake.requests.at(-1)).toMatchObject({ method: 'GET', path: '/health' });
    await call(gateway.client, 'registerSkill', { skill: entities('http://127.0.0.1:1', 'gone'), replace: false });
    expect(await call(gateway.client, 'checkSkill', { name: 'gone' })).toMatchObject({ reachable: false, detail: expect.stringContaining('ECONNREFUSED') });
  });

  it('probes a skill where it publishes its health: beside its endpoint, else at the server root (the PDF skill at /parse has /health)', async () => {
    fake.answerWith((request) => (request.path === '/health' ? { status: 200, body: { status: 'UP' } } : { status: 404, body: {} }));
    const pdf: Skill = { name: 'pdf', url: `${fake.origin}/parse`, capability: SkillCapability.SKILL_CAPABILITY_PDF_PARSING, pipeline: '', version: '' };
    await call(gateway.client, 'registerSkill', { skill: pdf, replace: true });
    expect(await call(gateway.client, 'checkSkill', { name: 'pdf' })).toMatchObject({ reachable: true, httpStatus: 200, detail: 'GET /health answered 200' });
    expect(fake.requests.map((request) => [request.method, request.path])).toEqual([
      ['GET', '/parse/health'],
      ['GET', '/health'],
    ]);

    fake.answerWith(() => ({ status: 404, body: {} }));
    expect(await call(gateway.client, 'checkSkill', { name: 'pdf' })).toMatchObject({
      reachable: true,
      httpStatus: 404,
      detail: 'GET /parse/health, /health answered 404: the skill answers, but has no health endpoint there or is unwell',
    });
  });
});
