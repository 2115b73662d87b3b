import { createHmac, randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { credentials, status } from '@grpc/grpc-js';
import { SecretsClient } from '@loom/contracts';
import { COMPONENT_KINDS } from '@loom/domain';
import { workflowToProto } from '@loom/domain/proto';
import { call, createClient, fieldViolationsOf } from '@loom/service-kit';
import { failure } from '@loom/service-kit/testing';
import { testCertificates, type TestCertificates } from '@loom/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SeenSignatures } from '../src/components/webhook-auth.js';
import { type ExecutorHarness, instance, startExecutor, workflowOf } from './harness.js';

// The webhook in a running workflow (pushed to the config store, sealed by the secrets service, started by the
// executor), called by a real HTTP client: who gets in, who is refused and how.

const OPERATOR_TOKEN = 'operator-token-5d1e8a2b7c9f4e03';
const VIEWER_TOKEN = 'viewer-token-8b3f1c6d2e7a9054';
const HOOK_SECRET = 'hook-secret-1f2e3d4c5b6a7988';

/** An HTTP answer as the client saw it. */
interface Answer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** POSTs `body` to `url` (HTTPS with `ca`) and reads the whole answer. */
function post(url: string, body: string | Buffer, headers: Record<string, string> = {}, ca?: Buffer): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const options = {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      ...(ca === undefined ? {} : { ca, servername: 'localhost' }),
    };
    const request = (ca === undefined ? httpRequest : httpsRequest)(url, options, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks).toString('utf8') }));
    });
    request.on('error', reject);
    request.end(body);
  });
}

/** `X-Loom-Signature`'s value: the HMAC-SHA256 of `signed` under `secret`. */
const sign = (secret: string, signed: string): string => `sha256=${createHmac('sha256', secret).update(signed).digest('hex')}`;

/** Unix seconds `offsetSeconds` from now, as `X-Loom-Timestamp` carries them. */
const unixSeconds = (offsetSeconds = 0): string => String(Math.floor(Date.now() / 1000) + offsetSeconds);

/** The headers of a request signed with its timestamp: the signature covers `<timestamp>.<body>`. */
function signedHeaders(secret: string, body: string, timestamp = unixSeconds()): Record<string, string> {
  return { 'x-loom-timestamp': timestamp, 'x-loom-signature': sign(secret, `${timestamp}.${body}`) };
}

/** A webhook workflow with a Logger sink; instance names unique per call, so log lines tell the runs apart. */
function hookWorkflow(options: Record<string, unknown>) {
  const id = randomUUID();
  const hook = `Orders hook_${id}`;
  const sink = `Log_${randomUUID()}`;
  const workflow = workflowOf(
    `Orders_${id}`,
    [instance(COMPONENT_KINDS.WEBHOOK, hook, { port: 0, path: '/orders', ...options }), instance(COMPONENT_KINDS.LOGGER, sink)],
    [[hook, sink]],
  );
  return { workflow, hook, sink };
}

/** Pushes and starts a webhook workflow; its URL from the port the webhook logged, and the bodies its sink logged. */
async function runHook(harness: ExecutorHarness, options: Record<string, unknown>, scheme = 'http') {
  const { workflow, hook, sink } = hookWorkflow(options);
  const put = await call(harness.store, 'putWorkflow', { workflow: workflowToProto(workflow) });
  const name = put.summary?.name ?? workflow.name;
  await call(harness.executor, 'startWorkflow', { name });
  const listening = harness.logged().find((line) => line.component === hook && line.msg === 'webhook listening');
  return {
    name,
    hook,
    url: `${scheme}://127.0.0.1:${String(listening?.port)}/orders`,
    listening,
    delivered: () => harness.logged().filter((line) => line.component === sink && line.messageId !== undefined),
    stop: () => call(harness.executor, 'stopWorkflow', { name }),
  };
}

describe('webhook authentication in a running workflow', () => {
  let harness: ExecutorHarness;
  let secrets: SecretsClient;

  beforeAll(async () => {
    harness = await startExecutor([
      `loom.auth.tokens.ops=${OPERATOR_TOKEN}`,
      'loom.auth.roles.ops=operator',
      `loom.auth.tokens.watcher=${VIEWER_TOKEN}`,
      'loom.auth.roles.watcher=viewer',
    ]);
    secrets = createClient(SecretsClient, `127.0.0.1:${harness.running.port}`, { retry: false });
    await call(secrets, 'createVariable', { key: 'ORDERS_HOOK_SECRET', value: HOOK_SECRET, encrypted: true, userUuid: '' });
  });

  afterAll(async () => {
    secrets.close();
    await harness.stop();
  });

  it('by default takes an operator bearer token, answers a viewer 403, and no or a wrong token 401 with a challenge and no detail', async () => {
    const run = await runHook(harness, {});
    expect(run.listening).toMatchObject({ authentication: 'bearer', tls: false });

    const accepted = await post(run.url, '{"order": 1}', { authorization: `Bearer ${OPERATOR_TOKEN}` });
    expect(accepted.status).toBe(202);
    await expect.poll(() => run.delivered().map((line) => line.body)).toEqual([{ order: 1 }]);

    const viewer = await post(run.url, '{"order": 2}', { authorization: `Bearer ${VIEWER_TOKEN}` });
    expect([viewer.status, JSON.parse(viewer.body)]).toEqual([403, { error: 'forbidden' }]);

    const strangers: Record<string, string>[] = [{}, { authorization: 'Bearer not-a-configured-token-123' }, { authorization: `Basic ${OPERATOR_TOKEN}` }];
    for (const headers of strangers) {
      const refused = await post(run.url, '{"order": 3}', headers);
      expect([refused.status, refused.headers['www-authenticate'], JSON.parse(refused.body)]).toEqual([401, 'Bearer realm="loom"', { error: 'unauthorized' }]);
      expect(refused.headers.connection).toBe('close');
    }
    // a stranger does not even learn the path: another path is 401 too
    expect((await post(run.url.replace('/orders', '/elsewhere'), '{}')).status).toBe(401);

    expect(run.delivered()).toHaveLength(1);
    const refusals = harness.logged().filter((line) => line.component === run.hook && line.msg === 'webhook request refused');
    expect(refusals.map((line) => line.status)).toEqual([403, 401, 401, 401, 401]);
    expect(harness.logLines.join('\n')).not.toContain(OPERATOR_TOKEN);
    await run.stop();
  });

  it('answers a stranger 401 before reading the body: the answer comes while the body is still unsent, and the connection closes', async () => {
    const run = await runHook(harness, {});
    const answered = await new Promise<{ status: number; closed: Promise<void>; continued: boolean }>((resolve, reject) => {
      // announces 64 MiB and sends 1 KiB of it: only an answer that does not wait for the body arrives
      const request = httpRequest(run.url, { method: 'POST', headers: { 'content-length': String(64 * 1024 * 1024), expect: '100-continue' } });
      let continued = false;
      request.on('continue', () => (continued = true));
      request.on('response', (response) => {
        const closed = new Promise<void>((done) => request.socket?.once('close', () => done()));
        response.resume();
        resolve({ status: response.statusCode ?? 0, closed, continued });
      });
      request.on('error', reject);
      request.flushHeaders();
    });
    expect(answered.status).toBe(401);
    // the server never asked for the body (no 100 Continue) and ended the connection itself
    expect(answered.continued).toBe(false);
    await answered.closed;
    expect(run.delivered()).toHaveLength(0);
    await run.stop();
  });

  it('with hmac, takes a body signed with its timestamp under the sealed $$VARIABLE secret and refuses a bad or missing signature 401', async () => {
    const run = await runHook(harness, { authentication: 'hmac', secret: '$$ORDERS_HOOK_SECRET' });
    // the secret was sealed at push: the stored file does not hold it
    const file = readdirSync(harness.workflowsDir).find((entry) => entry.startsWith(run.name) && entry.endsWith('.workflow.json'));
    const stored = readFileSync(join(harness.workflowsDir, file ?? 'missing'), 'utf8');
    expect(stored).not.toContain(HOOK_SECRET);
    expect(stored).toMatch(/"###AES-/);

    const body = '{"order": 10}';
    const accepted = await post(run.url, body, signedHeaders(HOOK_SECRET, body));
    expect(accepted.status).toBe(202);
    await expect.poll(() => run.delivered().map((line) => line.body)).toEqual([{ order: 10 }]);

    const now = unixSeconds();
    const wrong: Record<string, string>[] = [
      signedHeaders('another-secret', body),
      { 'x-loom-timestamp': now, 'x-loom-signature': sign(HOOK_SECRET, `${now}.{"order": 11}`) },
      // the body alone, without the timestamp, is not what is signed
      { 'x-loom-timestamp': now, 'x-loom-signature': sign(HOOK_SECRET, body) },
      { 'x-loom-timestamp': now, 'x-loom-signature': 'sha256=zz' },
      { 'x-loom-signature': sign(HOOK_SECRET, `${now}.${body}`) },
      { 'x-loom-timestamp': 'yesterday', 'x-loom-signature': sign(HOOK_SECRET, `yesterday.${body}`) },
      {},
    ];
    for (const headers of wrong) {
      const refused = await post(run.url, body, headers);
      expect([refused.status, refused.headers['www-authenticate'], JSON.parse(refused.body)]).toEqual([
        401,
        'HMAC-SHA256 realm="loom", header="X-Loom-Signature"',
        { error: 'unauthorized' },
      ]);
    }
    // a bearer token is no signature
    expect((await post(run.url, body, { authorization: `Bearer ${OPERATOR_TOKEN}` })).status).toBe(401);
    expect(run.delivered()).toHaveLength(1);
    expect(harness.logLines.join('\n')).not.toContain(HOOK_SECRET);
    await run.stop();
  });

  it('with hmac, refuses a captured request sent again, and one whose timestamp is past the tolerance either way', async () => {
    const run = await runHook(harness, { authentication: 'hmac', secret: '$$ORDERS_HOOK_SECRET', timestamp_tolerance: 60_000 });
    const body = '{"order": 12}';
    const captured = signedHeaders(HOOK_SECRET, body);
    expect((await post(run.url, body, captured)).status).toBe(202);
    expect((await post(run.url, body, captured)).status).toBe(401);
    // the same body signed at another second is a new request
    expect((await post(run.url, body, signedHeaders(HOOK_SECRET, body, unixSeconds(-30)))).status).toBe(202);
    for (const offset of [-120, 120]) expect((await post(run.url, body, signedHeaders(HOOK_SECRET, body, unixSeconds(offset)))).status).toBe(401);
    await expect.poll(() => run.delivered().map((line) => line.body)).toEqual([{ order: 12 }, { order: 12 }]);
    const reasons = harness
      .logged()
      .filter((line) => line.component === run.hook && line.msg === 'webhook request refused')
      .map((line) => line.reason);
    // the age in whole seconds depends on when the request arrived, so only its direction is asserted
    expect(reasons).toEqual([
      'the signature was accepted before: a replay',
      expect.stringMatching(/^the timestamp is \d+ s old, past the tolerance$/),
      expect.stringMatching(/^the timestamp is \d+ s ahead, past the tolerance$/),
    ]);
    await run.stop();
  });

  it('with hmac and signed_timestamp false, takes a signature of the body alone and warns at start that replays pass', async () => {
    const run = await runHook(harness, { authentication: 'hmac', secret: '$$ORDERS_HOOK_SECRET', signed_timestamp: false });
    const warning = harness.logged().find((line) => line.component === run.hook && line.level === 'warn');
    expect(warning?.msg).toBe('webhook signatures cover the body alone (signed_timestamp is false): a captured request can be sent again');
    const body = '{"order": 13}';
    expect((await post(run.url, body, { 'x-loom-signature': sign(HOOK_SECRET, body) })).status).toBe(202);
    expect((await post(run.url, body, { 'x-loom-signature': sign(HOOK_SECRET, body) })).status).toBe(202);
    await expect.poll(() => run.delivered().map((line) => line.body)).toEqual([{ order: 13 }, { order: 13 }]);
    await run.stop();
  });

  it('takes anyone only when authentication says none, and warns of it in the log at start', async () => {
    const run = await runHook(harness, { authentication: 'none' });
    const warning = harness.logged().find((line) => line.component === run.hook && line.level === 'warn');
    expect(warning?.msg).toBe('webhook takes requests from anyone who reaches it: its authentication option is none');
    expect((await post(run.url, '{"order": 20}')).status).toBe(202);
    await expect.poll(() => run.delivered().map((line) => line.body)).toEqual([{ order: 20 }]);
    await run.stop();
  });

  it('refuses at push an unknown mode and hmac without a secret, naming the field', async () => {
    const unknown = await failure(call(harness.store, 'putWorkflow', { workflow: workflowToProto(hookWorkflow({ authentication: 'basic' }).workflow) }));
    expect(unknown.code).toBe(status.INVALID_ARGUMENT);
    expect(fieldViolationsOf(unknown)).toEqual([
      expect.objectContaining({ field: 'components[0].options[2].value', description: "option 'authentication' must be one of: bearer, hmac, none" }),
    ]);
    const noSecret = await failure(call(harness.store, 'putWorkflow', { workflow: workflowToProto(hookWorkflow({ authentication: 'hmac' }).workflow) }));
    expect(noSecret.code).toBe(status.INVALID_ARGUMENT);
    expect(fieldViolationsOf(noSecret)).toEqual([expect.objectContaining({ field: 'components[0].options', reason: 'MISSING_OPTION' })]);
  });
});

describe('the signatures a webhook remembers against replays', () => {
  it('refuses one remembered until it expires, and forgets the oldest first past its capacity', () => {
    const seen = new SeenSignatures(2);
    expect([seen.remember('a', 1000, 0), seen.remember('a', 1000, 500), seen.remember('a', 2000, 1001)]).toEqual([true, false, true]);
    expect([seen.remember('b', 5000, 1002), seen.remember('c', 5000, 1003), seen.size]).toEqual([true, true, 2]);
    // 'a' was forgotten for 'c'; 'b' and 'c' are still refused
    expect([seen.remember('b', 5000, 1004), seen.remember('c', 5000, 1004)]).toEqual([false, false]);
  });
});

describe('webhook over TLS', () => {
  let certificates: TestCertificates;
  let harness: ExecutorHarness;

  beforeAll(async () => {
    certificates = testCertificates([{ name: 'localhost', altNames: 'DNS:localhost,IP:127.0.0.1' }, { name: 'tester' }]);
    harness = await startExecutor(
      [
        `loom.tls.certFile=${certificates.path('localhost.crt')}`,
        `loom.tls.keyFile=${certificates.path('localhost.key')}`,
        `loom.tls.caFile=${certificates.path('ca.crt')}`,
        // the test's gRPC clients prove themselves with the tester certificate
        'loom.auth.roles.tester=admin',
        `loom.auth.tokens.ops=${OPERATOR_TOKEN}`,
        'loom.auth.roles.ops=operator',
      ],
      {
        clientOptions: {
          credentials: credentials.createSsl(certificates.read('ca.crt'), certificates.read('tester.key'), certificates.read('tester.crt')),
          channelOptions: { 'grpc.ssl_target_name_override': 'localhost' },
        },
      },
    );
  });

  afterAll(async () => {
    await harness.stop();
    certificates.remove();
  });

  it("serves HTTPS with loom.tls's certificate, without a client certificate, to an operator's token", async () => {
    const run = await runHook(harness, {}, 'https');
    expect(run.listening).toMatchObject({ tls: true });
    const ca = certificates.read('ca.crt');
    const accepted = await post(run.url, '{"order": 30}', { authorization: `Bearer ${OPERATOR_TOKEN}` }, ca);
    expect(accepted.status).toBe(202);
    await expect.poll(() => run.delivered().map((line) => line.body)).toEqual([{ order: 30 }]);
    expect((await post(run.url, '{"order": 31}', {}, ca)).status).toBe(401);
    // plain HTTP gets no answer from a TLS webhook
    await expect(post(run.url.replace('https:', 'http:'), '{}')).rejects.toThrow();
    await run.stop();
  });
});
