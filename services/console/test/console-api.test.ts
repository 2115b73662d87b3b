import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ExecutorClient, WorkflowStoreClient } from '@loom/contracts';
import { FakeIdentityProvider } from '@loom/identity/testing';
import { call, createClient } from '@loom/service-kit';
import { checkedWorkflowText } from '@loom/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ConsoleHarness, startConsoleHarness } from './harness.js';

/**
 * Issue 52, the console's backend over HTTP (no browser): one loom with the console beside it for the file, static
 * tokens for an operator and a viewer, and the test identity provider for the authorization code flow with PKCE. Bad
 * input gets its status and a JSON error naming the field; the session cookie's attributes, the CSP, CSRF refused; a
 * viewer's forged retry refused by the executor's permission check (403) and audited under the viewer's identity;
 * start and retry audited under the operator's; counts arrive as server-sent events while messages are published.
 */
const NAME = 'Console api';
const OPERATOR = 'console-api-operator-0123456789';
const VIEWER = 'console-api-viewer-0123456789';
const ADMIN = 'console-api-admin-0123456789';
const MAX_BODY = 2048;

const workflowText = checkedWorkflowText(NAME, "if (body.fail) throw new Error('refused ' + body.n); return body;");

let provider: FakeIdentityProvider;
let files: string;
let loom: ConsoleHarness;
let base: string;
let executor: ExecutorClient;
let storedName: string;

/** A browser's cookie jar of one session: the cookie and the CSRF token its session answer gave. */
interface Browser {
  readonly cookie: string;
  readonly csrf: string;
}

async function request(path: string, init: RequestInit & { as?: Browser; csrf?: boolean } = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  if (init.as !== undefined) headers.set('cookie', init.as.cookie);
  if (init.as !== undefined && init.csrf !== false && init.method !== undefined && init.method !== 'GET') headers.set('x-csrf-token', init.as.csrf);
  if (typeof init.body === 'string' && !headers.has('content-type')) headers.set('content-type', 'application/json');
  return fetch(`${base}${path}`, { ...init, headers, redirect: 'manual' });
}

async function errorOf(response: Response): Promise<{ status: number; message: string; field?: string }> {
  const body = (await response.json()) as { error: { status: number; message: string; field?: string } };
  expect(body.error.status).toBe(response.status);
  return body.error;
}

/** The name=value of a Set-Cookie header. */
function cookiePair(setCookie: string): string {
  return setCookie.split(';')[0] as string;
}

async function signIn(token: string): Promise<Browser> {
  const answer = await request('/api/session', { method: 'POST', body: JSON.stringify({ token }) });
  expect(answer.status).toBe(204);
  const cookie = cookiePair(answer.headers.get('set-cookie') ?? '');
  const session = (await (await request('/api/session', { headers: { cookie } })).json()) as { csrfToken: string };
  return { cookie, csrf: session.csrfToken };
}

async function auditEntries(as: Browser, query: string): Promise<{ actor: string; action: string; workflow: string }[]> {
  const answer = await request(`/api/audit?${query}`, { as });
  expect(answer.status).toBe(200);
  return ((await answer.json()) as { entries: { actor: string; action: string; workflow: string }[] }).entries;
}

beforeAll(async () => {
  provider = await FakeIdentityProvider.start();
  files = mkdtempSync(join(tmpdir(), 'loom-console-api-'));
  const providerFile = join(files, 'keycloak.json');
  writeFileSync(
    providerFile,
    JSON.stringify({
      realm: provider.realm,
      'auth-server-url': provider.url,
      'ssl-required': 'none',
      resource: 'loom',
      'verify-token-audience': true,
      'use-resource-role-mappings': true,
    }),
  );
  // built pages of its own, so that the test does not depend on the pages' build
  const pages = join(files, 'pages');
  mkdirSync(join(pages, 'assets'), { recursive: true });
  writeFileSync(join(pages, 'index.html'), '<!doctype html><title>loom</title><script type="module" src="/assets/app-1.js"></script>');
  writeFileSync(join(pages, 'assets', 'app-1.js'), `console.log(${JSON.stringify('x'.repeat(4000))});\n`);
  loom = await startConsoleHarness([
    'loom.experimental.enabled=true',
    'loom.log.level=warn',
    'loom.scripts.python.warmInterpreters=0',
    `loom.auth.tokens.ops=${OPERATOR}`,
    'loom.auth.roles.ops=operator',
    `loom.auth.tokens.dana=${VIEWER}`,
    'loom.auth.roles.dana=viewer',
    `loom.auth.tokens.root=${ADMIN}`,
    'loom.auth.roles.root=admin',
    `loom.auth.oidc.configFile=${providerFile}`,
    `loom.console.maxBodyBytes=${MAX_BODY}`,
    `loom.console.staticDirectory=${pages}`,
  ]);
  base = loom.console.url;
  executor = createClient(ExecutorClient, loom.address, { retry: false, token: OPERATOR });
  const store = createClient(WorkflowStoreClient, loom.address, { retry: false, token: ADMIN });
  const { summary } = await call(store, 'putWorkflow', { compact: workflowText, sourceName: 'console.workflow.yaml', expectedVersion: 0 });
  store.close();
  storedName = summary?.name ?? '';
}, 120_000);

afterAll(async () => {
  executor?.close();
  await loom?.stop();
  await provider?.close();
  if (files !== undefined) rmSync(files, { recursive: true, force: true });
});

describe('the console backend', () => {
  it('serves the pages with a strict Content-Security-Policy, gzip and cache headers', async () => {
    const page = await request('/');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("default-src 'self'");
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(page.headers.get('content-security-policy')).not.toContain('unsafe-inline');
    expect(page.headers.get('x-content-type-options')).toBe('nosniff');
    expect(page.headers.get('cache-control')).toBe('no-cache');
    const asset = await fetch(`${base}/assets/app-1.js`, { headers: { 'accept-encoding': 'gzip' } });
    expect(asset.headers.get('content-encoding')).toBe('gzip');
    expect(asset.headers.get('cache-control')).toContain('immutable');
    expect(await asset.text()).toContain('xxxx');
    expect((await request('/nothing-here')).status).toBe(404);
  });

  it('answers bad input with its status and a JSON error naming the field', async () => {
    const malformed = await request('/api/session', { method: 'POST', body: '{"token":' });
    expect(malformed.status).toBe(400);
    expect((await errorOf(malformed)).message).toMatch(/not JSON/);
    const missing = await request('/api/session', { method: 'POST', body: JSON.stringify({ tokn: 'x' }) });
    expect(missing.status).toBe(400);
    expect((await errorOf(missing)).field).toBe('token');
    const wrong = await request('/api/session', { method: 'POST', body: JSON.stringify({ token: 'not-a-token' }) });
    expect(wrong.status).toBe(401);
    expect(await (await request('/api/sign-in')).json()).toEqual({ identityProvider: true, anonymous: false });
    const anonymous = await request('/api/session', { method: 'POST', body: JSON.stringify({ anonymous: true }) });
    expect(anonymous.status).toBe(401);
    expect((await errorOf(anonymous)).message).toContain('loom.auth.allowAnonymous');
    const oversized = await request('/api/session', { method: 'POST', body: JSON.stringify({ token: 'x'.repeat(MAX_BODY) }) });
    expect(oversized.status).toBe(413);
    const method = await request('/api/session', { method: 'PUT', body: '{}' });
    expect(method.status).toBe(405);
    expect(method.headers.get('allow')).toContain('POST');
    expect((await request('/api/nothing')).status).toBe(404);
    const operator = await signIn(OPERATOR);
    const unknown = await request('/api/workflows/no-such-workflow', { as: operator });
    expect(unknown.status).toBe(404);
    expect((await errorOf(unknown)).message).toContain('no-such-workflow');
    const noIds = await request('/api/failures/retry', { as: operator, method: 'POST', body: JSON.stringify({ workflow: storedName, ids: [3] }) });
    expect(noIds.status).toBe(400);
    expect((await errorOf(noIds)).field).toBe('ids[0]');
    const badTime = await request(`/api/audit?since=yesterday`, { as: operator });
    expect(badTime.status).toBe(400);
    expect((await errorOf(badTime)).field).toBe('since');
  });

  it('keeps the session server-side behind an HttpOnly, SameSite=Strict cookie and ends it on sign-out', async () => {
    expect((await request('/api/session')).status).toBe(401);
    const answer = await request('/api/session', { method: 'POST', body: JSON.stringify({ token: OPERATOR }) });
    const setCookie = answer.headers.get('set-cookie') ?? '';
    expect(setCookie).toMatch(/^loom-console=[\w-]{43}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=\d+$/);
    expect(setCookie).not.toContain(OPERATOR);
    const cookie = cookiePair(setCookie);
    const session = (await (await request('/api/session', { headers: { cookie } })).json()) as Record<string, unknown>;
    expect(session).toMatchObject({ identity: 'ops', roles: ['operator'] });
    expect(session['permissions']).toContain('operate');
    expect(JSON.stringify(session)).not.toContain(OPERATOR);
    const browser = { cookie, csrf: session['csrfToken'] as string };
    expect((await request('/api/session', { as: browser, method: 'DELETE', csrf: false })).status).toBe(403);
    expect((await request('/api/session', { as: browser, method: 'DELETE' })).status).toBe(204);
    expect((await request('/api/session', { as: browser })).status).toBe(401);
    expect((await request('/api/workflows', { headers: { cookie: 'loom-console=forged-session-id' } })).status).toBe(401);
  });

  it('starts a workflow for an operator, refuses it without the CSRF token, and audits it under the operator', async () => {
    const operator = await signIn(OPERATOR);
    const listed = (await (await request('/api/workflows', { as: operator })).json()) as { workflows: { name: string; state: string }[] };
    expect(listed.workflows.find((workflow) => workflow.name === storedName)?.state).toBe('STOPPED');
    const forged = await request(`/api/workflows/${encodeURIComponent(storedName)}/start`, { as: operator, method: 'POST', csrf: false });
    expect(forged.status).toBe(403);
    expect((await errorOf(forged)).message).toContain('X-CSRF-Token');
    const started = await request(`/api/workflows/${encodeURIComponent(storedName)}/start`, { as: operator, method: 'POST' });
    expect(started.status).toBe(200);
    expect(await started.json()).toMatchObject({ state: 'RUNNING' });
    await expect.poll(async () => (await auditEntries(operator, 'action=WORKFLOW_START')).map((entry) => entry.actor)).toContain('ops');
    const detail = (await (await request(`/api/workflows/${encodeURIComponent(storedName)}`, { as: operator })).json()) as Record<string, unknown>;
    expect(detail).toMatchObject({ name: storedName, state: 'RUNNING', version: 1 });
    expect(detail['compact']).toContain('In -> Check -> Done');
    expect((detail['picture'] as { nodes: unknown[]; edges: unknown[] }).nodes).toHaveLength(3);
    expect((detail['picture'] as { nodes: unknown[]; edges: unknown[] }).edges).toHaveLength(2);
  });

  it('streams each component’s counts as server-sent events while messages are published', async () => {
    const operator = await signIn(OPERATOR);
    const controller = new AbortController();
    const events = await request(`/api/workflows/${encodeURIComponent(storedName)}/events`, { as: operator, signal: controller.signal });
    expect(events.headers.get('content-type')).toContain('text/event-stream');
    const reader = (events.body as ReadableStream<Uint8Array>).pipeThrough(new TextDecoderStream()).getReader();
    const seen: number[] = [];
    let buffer = '';
    const readUntil = async (done: (inDone: number) => boolean): Promise<void> => {
      for (;;) {
        const { value, done: ended } = await reader.read();
        if (ended) throw new Error('the event stream ended');
        buffer += value;
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          if (!block.startsWith('event: counts')) continue;
          const data = JSON.parse(block.slice(block.indexOf('data: ') + 6)) as { components: Record<string, { in: number }> };
          // c2 is Done, the third component of the picture
          const inDone = data.components['c2']?.in ?? 0;
          seen.push(inDone);
          if (done(inDone)) return;
        }
      }
    };
    await readUntil(() => true);
    const before = seen.at(-1) ?? 0;
    const messages = Array.from({ length: 20 }, (_, n) => ({ messageId: `sse-${n}`, body: { n }, headers: {} }));
    await call(executor, 'publishMessages', { workflowName: storedName, inlet: 'In', messages });
    await readUntil((inDone) => inDone >= before + 20);
    controller.abort();
    expect(seen.at(-1)).toBeGreaterThanOrEqual(before + 20);
    // counts only rise
    expect([...seen].sort((a, b) => a - b)).toEqual(seen);
  });

  it("refuses a viewer's forged retry with 403 from the executor and audits it; an operator's retry is audited under the operator", async () => {
    await call(executor, 'publishMessages', {
      workflowName: storedName,
      inlet: 'In',
      messages: [{ messageId: 'bad-1', body: { n: 1, fail: true }, headers: {} }],
    });
    const operator = await signIn(OPERATOR);
    const viewer = await signIn(VIEWER);
    let failures: { id: string; error: string }[] = [];
    await expect
      .poll(async () => {
        const page = (await (await request(`/api/failures?workflow=${encodeURIComponent(storedName)}`, { as: viewer })).json()) as {
          failures: typeof failures;
        };
        failures = page.failures;
        return failures.length;
      })
      .toBe(1);
    expect(failures[0]?.error).toContain('refused 1');
    const viewerSession = (await (await request('/api/session', { as: viewer })).json()) as { permissions: string[] };
    expect(viewerSession.permissions).not.toContain('operate');
    const body = JSON.stringify({ workflow: storedName, ids: [failures[0]?.id] });
    const refused = await request('/api/failures/retry', { as: viewer, method: 'POST', body });
    expect(refused.status).toBe(403);
    expect((await errorOf(refused)).message).toContain('operate');
    const retried = await request('/api/failures/retry', { as: operator, method: 'POST', body });
    expect(retried.status).toBe(200);
    expect(await retried.json()).toEqual({ retried: 1 });
    // the services append their audit records after answering
    await expect.poll(async () => (await auditEntries(operator, 'action=PERMISSION_DENIED&actor=dana')).length).toBeGreaterThan(0);
    await expect.poll(async () => (await auditEntries(operator, 'action=FAILED_MESSAGES_RETRIED')).map((entry) => entry.actor)).toEqual(['ops']);
  });

  it('answers skills, schedules and the audit chain; verifying the chain needs administer', async () => {
    const operator = await signIn(OPERATOR);
    const admin = await signIn(ADMIN);
    expect(await (await request('/api/skills', { as: operator })).json()).toEqual({ skills: [] });
    const schedules = await request('/api/schedules', { as: operator });
    expect(schedules.status).toBe(200);
    expect(Array.isArray(((await schedules.json()) as { schedules: unknown }).schedules)).toBe(true);
    const refused = await request('/api/audit/verify', { as: operator, method: 'POST' });
    expect(refused.status).toBe(403);
    expect((await errorOf(refused)).message).toContain('administer');
    const verified = (await (await request('/api/audit/verify', { as: admin, method: 'POST' })).json()) as { ok: boolean; checked: number };
    expect(verified.ok).toBe(true);
    expect(verified.checked).toBeGreaterThan(0);
  });

  it('signs in through the identity provider with the authorization code flow and PKCE', async () => {
    const login = await request('/auth/login');
    expect(login.status).toBe(302);
    const location = new URL(login.headers.get('location') ?? '');
    expect(location.searchParams.get('code_challenge_method')).toBe('S256');
    expect(location.searchParams.get('redirect_uri')).toBe(`${base}/auth/callback`);
    const loginCookie = cookiePair(login.headers.get('set-cookie') ?? '');
    const back = await fetch(location, { redirect: 'manual' });
    expect(back.status).toBe(302);
    const callback = new URL(back.headers.get('location') ?? '');
    // the callback without the browser's login cookie is refused: it was not started in this browser
    expect((await request(`${callback.pathname}${callback.search}`)).status).toBe(400);
    const second = await request('/auth/login');
    const secondCookie = cookiePair(second.headers.get('set-cookie') ?? '');
    const again = new URL((await fetch(new URL(second.headers.get('location') ?? ''), { redirect: 'manual' })).headers.get('location') ?? '');
    const signedIn = await request(`${again.pathname}${again.search}`, { headers: { cookie: secondCookie } });
    expect(signedIn.status).toBe(302);
    expect(signedIn.headers.get('location')).toBe('/');
    const cookie = signedIn.headers
      .getSetCookie()
      .map(cookiePair)
      .find((pair) => pair.startsWith('loom-console='));
    const session = (await (await request('/api/session', { headers: { cookie: cookie ?? '' } })).json()) as Record<string, unknown>;
    expect(session).toMatchObject({ identity: 'user:alice', roles: ['operator'] });
    expect(loginCookie).not.toBe(secondCookie);
  });
});
