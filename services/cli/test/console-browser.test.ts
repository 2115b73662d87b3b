import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ExecutorClient } from '@loom/contracts';
import { FakeIdentityProvider } from '@loom/identity/testing';
import { call, createClient } from '@loom/service-kit';
import { type FakeSkill, startFakeSkill } from '@loom/service-kit/testing';
import { checkedWorkflowText } from '@loom/testing';
import { type Browser, type Locator, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildPages, consoleUrl, expectAccessible, launchChromium, openPage, screenshot } from './console-pages.js';
import { type InProcessLoom, runCli, startLoom } from './loom-in-process.js';

/**
 * Issue 52, the console in a real browser: Debian's chromium (playwright-core, no browser download) against the
 * console `loom serve` starts, one loom and one browser for the file, each test in its own browser context (its own
 * cookies). Sign-in with a token and through the test identity provider (authorization code with PKCE); a workflow
 * started, stopped and started again from the page while its counts rise; a failed message retried from the page; the
 * audit entries of those actions under the user's identity; a viewer without the buttons and refused a forged request;
 * a request without the CSRF token refused; a bad session back to sign-in; axe-core and the keyboard on every page.
 */
const NAME = 'Console pipeline';
const OPERATOR = 'console-operator-token-0123456789';
const VIEWER = 'console-viewer-token-0123456789';

/** A script that refuses a message marked `fail` until the fixed version is pushed. */
function workflowText(fixed: boolean): string {
  const script = fixed ? 'return { ...body, ok: true };' : "if (body.fail) throw new Error('refused message ' + body.n); return { ...body, ok: true };";
  return checkedWorkflowText(NAME, script);
}

let provider: FakeIdentityProvider;
let skill: FakeSkill;
let files: string;
let loom: InProcessLoom;
let executor: ExecutorClient;
let browser: Browser;
let url: string;

const cli = (...args: string[]): ReturnType<typeof runCli> => runCli(['--address', loom.address, '--token', OPERATOR, ...args]);

async function pushWorkflow(fixed: boolean): Promise<void> {
  const file = join(files, 'console.workflow.yaml');
  writeFileSync(file, workflowText(fixed));
  const pushed = await cli('workflow', 'push', file);
  expect(pushed.stderr).toBe('');
}

/** Publishes messages n = from..to-1; those in `failing` are refused by the unfixed script. */
async function publish(from: number, to: number, failing: ReadonlySet<number> = new Set()): Promise<void> {
  const messages = Array.from({ length: to - from }, (_, index) => {
    const n = from + index;
    return { messageId: `m-${n}`, body: { n, fail: failing.has(n) }, headers: {} };
  });
  await call(executor, 'publishMessages', { workflowName: NAME, inlet: 'In', messages });
}

/** Signs in on the sign-in page with a token and waits for the workflows page. */
async function signIn(page: Page, token: string): Promise<void> {
  await page.goto(url);
  await page.getByLabel('Operator token').fill(token);
  await page.getByRole('button', { name: 'Sign in with the token' }).click();
  await expect.poll(() => page.getByRole('heading', { name: 'Workflows' }).isVisible()).toBe(true);
}

/** The workflows page's row of the workflow (the page shows its name without the stored uuid). */
function workflowRow(page: Page): Locator {
  return page.locator('tbody tr').filter({ has: page.getByRole('link', { name: NAME, exact: true }) });
}

/** A component's count on the workflow page's picture (`in`, `out`, `failed`, ...). */
async function countOf(page: Page, component: string, count: string): Promise<number> {
  const text = await page.locator(`.component:has(.component-name:text-is("${component}")) [data-count="${count}"]`).textContent();
  return Number(text ?? 'NaN');
}

/** The state the page shows for the workflow (the workflows table's cell or the workflow page's line). */
function shownState(page: Page): Promise<string | null> {
  return page.locator('[data-state]').first().textContent();
}

/** Sends a state-changing request from the page as a script would: with or without the session's CSRF token. */
function forgedPost(page: Page, path: string, body: unknown, withCsrf: boolean): Promise<{ status: number; body: unknown }> {
  return page.evaluate(
    async ({ path, body, withCsrf }) => {
      const session = (await (await fetch('/api/session')).json()) as { csrfToken: string };
      const headers: Record<string, string> = { 'Content-Type': 'application/json' };
      if (withCsrf) headers['X-CSRF-Token'] = session.csrfToken;
      const response = await fetch(path, { method: 'POST', headers, body: JSON.stringify(body) });
      return { status: response.status, body: await response.json() };
    },
    { path, body, withCsrf },
  );
}

beforeAll(async () => {
  buildPages();
  provider = await FakeIdentityProvider.start();
  provider.signInAs = { user: 'alice', roles: ['loom_operator'] };
  // a skill for the skills page: a loopback HTTP server that answers every probe
  skill = await startFakeSkill(() => ({ status: 200, body: { status: 'ok' } }));
  files = mkdtempSync(join(tmpdir(), 'loom-console-'));
  const providerFile = join(files, 'loom-client.json');
  writeFileSync(
    providerFile,
    JSON.stringify({
      realm: provider.realm,
      'auth-server-url': provider.url,
      'ssl-required': 'none',
      resource: 'loom',
      'use-resource-role-mappings': true,
      'public-client': true,
    }),
  );
  const settings = [
    'loom.console.port=0',
    'loom.log.level=warn',
    'loom.experimental.enabled=true',
    'loom.scripts.python.warmInterpreters=0',
    `loom.auth.oidc.configFile=${providerFile}`,
    `loom.auth.tokens.ops=${OPERATOR}`,
    'loom.auth.roles.ops=admin',
    `loom.auth.tokens.dana=${VIEWER}`,
    'loom.auth.roles.dana=viewer',
    `loom.skills.register.keywords=${JSON.stringify({ capability: 'KEYWORD_EXTRACTION', url: `${skill.origin}/extractKeywords` })}`,
  ];
  loom = await startLoom(['--services', 'audit,config-store,secrets,executor,scheduler,skill-gateway', ...settings.flatMap((setting) => ['--set', setting])]);
  url = consoleUrl(loom);
  executor = createClient(ExecutorClient, loom.address, { retry: false, deadlineMs: 60_000, token: OPERATOR });
  browser = await launchChromium();
  await pushWorkflow(false);
  // a schedule for the schedules page: 04:00 UTC each day, which no test run reaches
  const scheduled = await cli('schedule', 'set', NAME, '--cron', '0 0 4 * * *', '--timezone', 'UTC', '--overlap', 'SKIP');
  expect(scheduled.stderr).toBe('');
});
afterAll(async () => {
  await browser?.close();
  executor?.close();
  await loom?.stop();
  await provider?.close();
  await skill?.close();
  if (files !== undefined) rmSync(files, { recursive: true, force: true });
});

describe('the console in chromium', () => {
  it('signs in with a token; starts, stops and starts a workflow from the page while its counts rise; retries a failed message; audits each action', async () => {
    const { context, page, problems } = await openPage(browser);
    await page.goto(url);
    await expect.poll(() => page.getByRole('heading', { name: 'Sign in to loom' }).isVisible()).toBe(true);
    await expectAccessible(page);
    await screenshot(page, 'sign-in');

    await signIn(page, OPERATOR);
    const row = workflowRow(page);
    await expect.poll(() => row.locator('td.state').textContent()).toBe('STOPPED');
    await row.getByRole('button', { name: `start ${NAME}` }).click();
    await expect.poll(() => row.locator('td.state').textContent()).toBe('RUNNING');
    await expectAccessible(page);
    await screenshot(page, 'workflows');

    // the picture, and its counts rising with each batch published
    await row.getByRole('link', { name: NAME }).click();
    await expect.poll(() => page.locator('.component').count()).toBe(3);
    await publish(0, 10, new Set([3, 7]));
    await expect.poll(() => countOf(page, 'Done', 'in')).toBe(8);
    await expect.poll(() => countOf(page, 'Check', 'failed')).toBe(2);
    await publish(10, 30);
    await expect.poll(() => countOf(page, 'Done', 'in')).toBe(28);
    expect(await countOf(page, 'In', 'out')).toBe(30);
    await expectAccessible(page);
    await screenshot(page, 'workflow');

    // stop and start from the page
    await page.getByRole('button', { name: `stop ${NAME}` }).click();
    await expect.poll(() => shownState(page)).toBe('STOPPED');
    expect((await cli('workflow', 'status', NAME)).stdout).toContain('STOPPED');
    await pushWorkflow(true);
    await page.getByRole('button', { name: `start ${NAME}` }).click();
    await expect.poll(() => shownState(page)).toBe('RUNNING');
    // pause and resume from the page
    await page.getByRole('button', { name: `pause ${NAME}` }).click();
    await expect.poll(() => shownState(page)).toBe('PAUSED');
    await page.getByRole('button', { name: `resume ${NAME}` }).click();
    await expect.poll(() => shownState(page)).toBe('RUNNING');

    // the two refused messages, retried from the failures page by the fixed version
    await page.getByRole('link', { name: 'Failed messages' }).click();
    const failures = page.locator('tr[data-failure]');
    await expect.poll(() => failures.count()).toBe(2);
    await failures.first().getByRole('button').click();
    await expect.poll(() => page.getByLabel('The error').textContent()).toContain('refused message');
    await expectAccessible(page);
    await screenshot(page, 'failures');
    for (const checkbox of await page.getByRole('checkbox', { name: /^Select / }).all()) await checkbox.check();
    await page.getByRole('button', { name: 'Retry selected' }).click();
    await expect.poll(() => page.getByText('Retried 2 messages.').isVisible()).toBe(true);
    await expect.poll(() => failures.count()).toBe(0);

    // each action in the audit log, newest first: the page's start, stop, start, pause, resume and retry (the pushes
    // are WORKFLOW_CONFIG_PUSHED, the refusals PRIVILEGED_WORKFLOW_COMPONENT_FAILURE, left out here)
    await page.getByRole('link', { name: 'Audit' }).click();
    const PAGE_ACTIONS = new Set(['WORKFLOW_START', 'WORKFLOW_STOP', 'WORKFLOW_PAUSED', 'WORKFLOW_RESUMED', 'FAILED_MESSAGES_RETRIED']);
    const rows = async (): Promise<string[][]> =>
      (await page.locator('tbody tr').allInnerTexts()).map((row) => row.split('\t')).filter((cells) => PAGE_ACTIONS.has(cells[2] ?? ''));
    await expect
      .poll(async () => (await rows()).map((cells) => cells[2]))
      .toEqual(['FAILED_MESSAGES_RETRIED', 'WORKFLOW_RESUMED', 'WORKFLOW_PAUSED', 'WORKFLOW_START', 'WORKFLOW_STOP', 'WORKFLOW_START']);
    // each under the user's identity (the console's calls carry the user's token)
    expect((await rows()).map((cells) => cells[1])).toEqual(['ops', 'ops', 'ops', 'ops', 'ops', 'ops']);
    await page.getByRole('button', { name: 'Verify the chain' }).click();
    await expect.poll(() => page.getByText(/The chain holds: \d+ entries checked/).isVisible()).toBe(true);
    // the live tail shows an action taken elsewhere as it is appended
    await page.getByRole('checkbox', { name: 'Live tail' }).check();
    await expect.poll(() => page.getByText('Following new entries as they are appended.').isVisible()).toBe(true);
    expect((await cli('workflow', 'stop', NAME)).status).toBe(0);
    await expect.poll(() => page.locator('section tbody tr[data-action="WORKFLOW_STOP"]').count()).toBe(1);
    await expectAccessible(page);
    await screenshot(page, 'audit');
    await page.getByLabel('Actor').fill('dana');
    await page.getByRole('button', { name: 'Filter' }).click();
    await expect.poll(() => page.getByText('No entries match.').isVisible()).toBe(true);

    await page.getByRole('link', { name: 'Skills' }).click();
    await expect.poll(() => page.locator('tbody tr').filter({ hasText: 'keywords' }).locator('td.health').textContent()).toBe('reachable');
    await page.getByRole('link', { name: 'Schedules' }).click();
    await expect.poll(() => page.locator('tbody tr').filter({ hasText: NAME }).innerText()).toContain('0 0 4 * * * (UTC)');
    for (const [link, heading, name] of [
      ['Skills', 'Skills', 'skills'],
      ['Schedules', 'Schedules', 'schedules'],
    ] as const) {
      await page.getByRole('link', { name: link }).click();
      await expect.poll(() => page.getByRole('heading', { name: heading }).isVisible()).toBe(true);
      await expect.poll(() => page.getByRole('status').filter({ hasText: 'Loading' }).count()).toBe(0);
      await expectAccessible(page);
      await screenshot(page, name);
    }
    expect(problems).toEqual([]);
    await context.close();
    // some twenty page steps, each waiting for the page (9 s alone; a loaded machine takes several times that)
  }, 240_000);

  it('shows a viewer no button it may not press, and the backend refuses the viewer a forged retry with 403', async () => {
    const { context, page, problems } = await openPage(browser);
    await signIn(page, VIEWER);
    await expect.poll(() => workflowRow(page).count()).toBe(1);
    expect(await page.getByRole('button', { name: /^(start|stop|pause|resume) / }).count()).toBe(0);
    await page.getByRole('link', { name: 'Failed messages' }).click();
    await expect.poll(() => page.getByText(/No failed messages of/).isVisible()).toBe(true);
    expect(await page.getByRole('button', { name: 'Retry selected' }).count()).toBe(0);
    expect(await page.getByRole('checkbox').count()).toBe(0);
    const forged = await forgedPost(page, '/api/failures/retry', { workflow: NAME, ids: ['any'] }, true);
    expect(forged.status).toBe(403);
    expect(forged.body).toMatchObject({ error: { status: 403 } });
    expect(problems).toEqual([]);
    await context.close();
  });

  it('refuses a state-changing request without the CSRF token, and sends a bad session back to sign-in', async () => {
    const { context, page } = await openPage(browser);
    await signIn(page, OPERATOR);
    const refused = await forgedPost(page, `/api/workflows/${encodeURIComponent(NAME)}/start`, undefined, false);
    expect(refused.status).toBe(403);
    expect(JSON.stringify(refused.body)).toContain('X-CSRF-Token');
    expect((await cli('workflow', 'status', NAME)).stdout).toContain('STOPPED');

    // the session's cookie replaced by one the console never issued: the next page's request is answered 401
    const [cookie] = await context.cookies(url);
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict' });
    await context.addCookies([{ ...cookie!, value: 'not-a-session' }]);
    await page.getByRole('link', { name: 'Skills' }).click();
    await expect.poll(() => page.getByRole('heading', { name: 'Sign in to loom' }).isVisible()).toBe(true);
    expect(await page.getByText('Your session has ended. Sign in again.').isVisible()).toBe(true);
    await context.close();
  });

  it('signs in through the identity provider (authorization code with PKCE) as the provider says', async () => {
    const { context, page, problems } = await openPage(browser);
    await page.goto(url);
    await page.getByRole('link', { name: 'Sign in with the identity provider' }).click();
    await expect.poll(() => page.getByRole('heading', { name: 'Workflows' }).isVisible()).toBe(true);
    expect(await page.locator('.who').textContent()).toContain('alice');
    const [authorization] = provider.authorizationRequests;
    expect(authorization?.get('code_challenge_method')).toBe('S256');
    expect(authorization?.get('response_type')).toBe('code');
    // the token never reaches the page: not in the address, not in the browser's storage
    expect(page.url()).not.toMatch(/code=|token=/);
    expect(await page.evaluate('JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage })')).toBe('{}{}');
    expect(problems).toEqual([]);
    await context.close();
  });
});
