import { mkdirSync, mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliResult, type InProcessLoom, runCli, startLoom } from './loom-in-process.js';
import { writeWorkflow } from './scheduled-workflows.js';

const root = join(mkdtempSync(join(tmpdir(), 'loom-cli-schedules-')), 'workflows');
mkdirSync(root, { recursive: true });
const AUTO = writeWorkflow(root, 'Always on', 1, { autoStart: true });
const MANUAL = writeWorkflow(root, 'Only by hand', 2, { autoStart: false });

let blocker: Server;
let blockedPort: number;
let HOOK: string;
let loom: InProcessLoom;

beforeAll(async () => {
  // a webhook workflow whose port is taken throws at every start until the port is free
  blocker = createServer();
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  blockedPort = (blocker.address() as { port: number }).port;
  HOOK = writeWorkflow(root, 'Webhook intake', 3, { autoStart: true, webhookPort: blockedPort });
  loom = await startLoom([
    '--set',
    `loom.datasource.filesystemRoot=${root}`,
    '--set',
    'loom.auth.allowAnonymous=true',
    '--set',
    'loom.scheduler.restart.initialDelayMs=200',
    '--set',
    'loom.scheduler.restart.maxDelayMs=5000',
  ]);
});
afterAll(async () => {
  blocker.close();
  await loom.stop();
});

const loomAt = (...args: string[]): Promise<CliResult> => runCli(['--address', loom.address, ...args]);

async function state(name: string): Promise<string> {
  const status = await loomAt('workflow', 'status', name, '--output', 'json');
  return status.status === 0 ? (JSON.parse(status.stdout) as { state: string }).state : `exit ${status.status}: ${status.stderr.trim()}`;
}

interface ListedJson {
  workflowName: string;
  autoStart: boolean;
  runState: string;
  restartAttempts: number;
  lastError: string;
  paused: boolean;
  nextFireTime: string | null;
  leaseHolder: string;
  schedule: { cron: string; overlap: string } | null;
  fires: { started: number; skipped: number };
}

async function listed(): Promise<ListedJson[]> {
  const list = await loomAt('schedule', 'list', '--output', 'json');
  expect(list.stderr).toBe('');
  return JSON.parse(list.stdout) as ListedJson[];
}

describe('the scheduler in loom serve', () => {
  it('a stored autoStart workflow is RUNNING after loom serve starts, without any API call; others are left alone', async () => {
    await expect.poll(() => state(AUTO)).toBe('RUNNING');
    expect(await state(MANUAL)).toMatch(/NOT_FOUND/);
    const started = loom.logLines
      .map((line) => JSON.parse(line) as { service?: string; msg?: string; workflow?: string; reason?: string })
      .find((entry) => entry.service === 'scheduler' && entry.msg === 'workflow started' && entry.workflow === AUTO);
    expect(started?.reason).toBe('autoStart');
  });

  it('retries a workflow that throws at start with growing delays, shown by loom schedule list, until it starts', async () => {
    await expect.poll(async () => (await listed()).find((entry) => entry.workflowName === HOOK)?.restartAttempts ?? 0).toBeGreaterThanOrEqual(3);
    const failing = (await listed()).find((entry) => entry.workflowName === HOOK);
    expect(failing?.lastError).toContain(String(blockedPort));
    const table = await loomAt('schedule', 'list');
    expect(table.stdout).toMatch(/^WORKFLOW\s+SCHEDULE\s+POLICY\s+PAUSED\s+NEXTFIRE\s+LASTFIRE\s+AUTOSTART\s+RUN\s+RESTARTS\s+LASTERROR/);
    expect(table.stdout).toMatch(/lease holder: \S+/);

    const retries = loom.logLines
      .map((line) => JSON.parse(line) as { msg?: string; workflow?: string; attempt?: number; delayMs?: number })
      .filter((entry) => entry.msg === 'workflow failed; restarting it after a backoff delay' && entry.workflow === HOOK);
    expect(retries.slice(0, 3).map((entry) => entry.attempt)).toEqual([1, 2, 3]);
    const delays = retries.map((entry) => entry.delayMs ?? 0);
    for (let index = 1; index < delays.length; index++) expect(delays[index]).toBeGreaterThan(delays[index - 1] as number);

    await new Promise<void>((resolve) => blocker.close(() => resolve()));
    await expect.poll(() => state(HOOK)).toBe('RUNNING');
  });

  it('loom schedule set, list, pause, resume and trigger', async () => {
    const set = await loomAt(
      'schedule',
      'set',
      'Only by hand',
      '--cron',
      '0 0 4 * * *',
      '--timezone',
      'Europe/Berlin',
      '--overlap',
      'SKIP',
      '--catch-up',
      'LATEST',
    );
    expect(set.stderr).toBe('');
    await expect.poll(async () => (await listed()).find((entry) => entry.workflowName === MANUAL)?.schedule?.cron, { timeout: 5000 }).toBe('0 0 4 * * *');
    const entry = (await listed()).find((candidate) => candidate.workflowName === MANUAL);
    expect(entry?.nextFireTime).toMatch(/T0[23]:00:00\.000Z$/); // 04:00 in Berlin
    expect(entry?.leaseHolder).toMatch(/:\d+:[0-9a-f]{6}$/);

    const paused = await loomAt('schedule', 'pause', 'Only by hand');
    expect(paused.stdout).toMatch(new RegExp(`${MANUAL}\\s+0 0 4 \\* \\* \\* Europe/Berlin\\s+SKIP/LATEST\\s+true\\s+-`));
    const triggered = await loomAt('schedule', 'trigger', 'Only by hand');
    expect(triggered.status).toBe(0);
    expect(triggered.stdout).toMatch(/^WORKFLOW\s+OUTCOME\s+RUNID\s+DETAIL\nOnly by hand\s+STARTED\s+[0-9a-f-]{36}\s+-\n$/);
    expect(await state(MANUAL)).toBe('RUNNING');
    const skipped = await loomAt('schedule', 'trigger', 'Only by hand', '--output', 'json');
    expect(JSON.parse(skipped.stdout)).toMatchObject({ outcome: 'SKIPPED', detail: expect.stringContaining('SKIP') });
    const resumed = await loomAt('schedule', 'resume', 'Only by hand', '--output', 'json');
    expect(JSON.parse(resumed.stdout)).toMatchObject([{ paused: false, fires: { started: 1, skipped: 1 } }]);

    const unknown = await loomAt('schedule', 'pause', 'No such workflow');
    expect(unknown.status).toBe(1);
    expect(unknown.stderr.trim()).toMatch(/^loom: NOT_FOUND: /);
    const none = await loomAt('schedule', 'trigger', 'Always on');
    expect(none.stderr.trim()).toMatch(/^loom: FAILED_PRECONDITION: .*has no schedule/);
  });
});
