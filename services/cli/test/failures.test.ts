import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ExecutorClient, type FailedMessage, WorkflowState } from '@loom/contracts';
import { call, createClient } from '@loom/service-kit';
import { checkedWorkflowText } from '@loom/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type InProcessLoom, runCli, startLoom } from './loom-in-process.js';

/**
 * Issue 50, the failure store in memory mode: a JavaScript script throws for every tenth message, the hundred failures
 * are kept in the data directory (across a restart of loom), listed and shown through the CLI, refused retries change
 * nothing, and after the fixed script is pushed `loom failures retry --all` sends them through: all 1,000 processed
 * (the sink's counters), the store empty. One loom, started twice on the same data directory.
 */
const MESSAGES = 1000;
const NAME = 'Tenth fails';

function workflowText(fixed: boolean): string {
  const script = fixed
    ? 'return { ...body, ok: true };'
    : "if (body.n % 10 === 0) throw new Error('the tenth message ' + body.n); return { ...body, ok: true };";
  return checkedWorkflowText(NAME, script);
}

const OPERATOR = 'operator-token-0123456789';
const VIEWER = 'viewer-token-0123456789';
const SETTINGS = [
  ...['loom.experimental.enabled=true', 'loom.log.level=warn', 'loom.scripts.python.warmInterpreters=0'],
  ...[`loom.auth.tokens.ops=${OPERATOR}`, 'loom.auth.roles.ops=admin', `loom.auth.tokens.dana=${VIEWER}`, 'loom.auth.roles.dana=viewer'],
].flatMap((setting) => ['--set', setting]);

let data: string;
let files: string;
let loom: InProcessLoom;
let executor: ExecutorClient;

async function startOn(directory: string): Promise<void> {
  loom = await startLoom([...SETTINGS, '--set', `loom.data.directory=${directory}`]);
  executor = createClient(ExecutorClient, loom.address, { retry: false, deadlineMs: 60_000, token: OPERATOR });
}

async function stopLoom(): Promise<void> {
  executor?.close();
  await loom?.stop();
}

const cli = (...args: string[]): ReturnType<typeof runCli> => runCli(['--address', loom.address, '--token', OPERATOR, ...args]);
const asViewer = (...args: string[]): ReturnType<typeof runCli> => runCli(['--address', loom.address, '--token', VIEWER, ...args]);

async function cliJson<T>(...args: string[]): Promise<T> {
  const result = await cli('--output', 'json', ...args);
  expect(result.stderr, result.stderr).toBe('');
  expect(result.status).toBe(0);
  return JSON.parse(result.stdout) as T;
}

interface Listing {
  readonly messages: (Omit<FailedMessage, 'message'> & { message?: { body: { n: number } } })[];
  readonly total: number;
  readonly countsByKind: Record<string, number>;
  readonly nextPageToken: string;
}

/** The sink's messages in of the workflow's current run. */
async function processed(): Promise<number> {
  const status = await call(executor, 'getWorkflowStatus', { name: NAME });
  return status.components.find((component) => component.name.startsWith('Done'))?.messagesIn ?? 0;
}

beforeAll(async () => {
  data = mkdtempSync(join(tmpdir(), 'loom-failures-'));
  files = mkdtempSync(join(tmpdir(), 'loom-failures-files-'));
  await startOn(data);
});
afterAll(async () => {
  await stopLoom();
  rmSync(data, { recursive: true, force: true });
  rmSync(files, { recursive: true, force: true });
});

describe('the failure store in memory mode', () => {
  it('keeps the hundred messages a script refused, across a restart, and retries them all after the fix', async () => {
    const file = join(files, 'tenth.workflow.yaml');
    writeFileSync(file, workflowText(false));
    const pushed = await cli('workflow', 'push', file);
    expect(pushed.stderr).toBe('');
    expect((await cli('workflow', 'start', NAME)).status).toBe(0);
    for (let from = 0; from < MESSAGES; from += 100) {
      const messages = Array.from({ length: 100 }, (_, index) => ({ messageId: `m-${from + index + 1}`, body: { n: from + index + 1 }, headers: {} }));
      await call(executor, 'publishMessages', { workflowName: NAME, inlet: 'In', messages });
    }
    await expect.poll(processed, { timeout: 60_000 }).toBe(MESSAGES - MESSAGES / 10);
    const listing = await cliJson<Listing>('failures', 'list', NAME, '--limit', '1000');
    expect(listing.total).toBe(100);
    expect(listing.countsByKind).toEqual({ 'invalid-argument': 100 });
    expect(listing.messages.map((message) => message.message?.body.n).sort((a, b) => a! - b!)).toEqual(
      Array.from({ length: 100 }, (_, index) => (index + 1) * 10),
    );
    expect(new Set(listing.messages.map((message) => message.component))).toEqual(new Set(['Check']));
    expect(listing.messages.every((message) => message.attempts === 1 && message.workflowVersion === 1 && !message.failure!.retryable)).toBe(true);
    expect(listing.messages[0]!.failure!.message).toContain('the tenth message');

    // a page, a filter and one record in text
    const page = await cliJson<Listing>('failures', 'list', NAME, '--limit', '30', '--kind', 'invalid-argument');
    expect(page.messages).toHaveLength(30);
    expect(page.total).toBe(100);
    expect(page.nextPageToken).not.toBe('');
    expect((await cliJson<Listing>('failures', 'list', NAME, '--kind', 'unavailable')).total).toBe(0);
    const first = listing.messages[0]!;
    const shown = await cli('failures', 'show', NAME, first.id);
    expect(shown.stdout).toContain(`id:            ${first.id}`);
    expect(shown.stdout).toMatch(/failure: {7}invalid-argument: .*the tenth message/);
    expect(shown.stdout).toContain(`"n":${first.message!.body.n}`);
    // a viewer sees the metadata, not the body, and may not retry
    const viewed = await asViewer('failures', 'show', NAME, first.id);
    expect(viewed.stdout).toContain('(kept; your role may not read message content)');
    expect(viewed.stdout).not.toContain(`"n":`);
    const viewerRetry = await asViewer('failures', 'retry', NAME, first.id);
    expect(viewerRetry.stderr).toContain('PERMISSION_DENIED');

    // the store is in the data directory: a restart of loom keeps it
    await stopLoom();
    await startOn(data);
    expect((await cliJson<Listing>('failures', 'list', NAME)).total).toBe(100);

    // bad input: one line each, nothing changed
    const unknown = await cli('failures', 'retry', NAME, first.id, 'no-such-id');
    expect(unknown.status).not.toBe(0);
    expect(unknown.stderr.trim().split('\n')).toHaveLength(1);
    expect(unknown.stderr).toContain("no failed message 'no-such-id'");
    const notRunning = await cli('failures', 'retry', NAME, '--all');
    expect(notRunning.status).not.toBe(0);
    expect(notRunning.stderr).toContain('start it');
    expect((await cliJson<Listing>('failures', 'list', NAME)).total).toBe(100);

    // retried before the fix, it fails again and comes back with its attempts counted on
    expect((await cli('workflow', 'start', NAME)).status).toBe(0);
    expect((await cli('failures', 'retry', NAME, first.id)).stdout.trim()).toBe(`retried 1 failed messages of '${NAME}'`);
    await expect.poll(async () => (await cliJson<{ attempts: number }>('failures', 'show', NAME, first.id)).attempts).toBe(2);
    expect((await cliJson<Listing>('failures', 'list', NAME)).total).toBe(100);

    // the fix, pushed; the run of the new version retries them
    expect((await cli('workflow', 'stop', NAME)).status).toBe(0);
    writeFileSync(file, workflowText(true));
    expect((await cli('workflow', 'push', file)).status).toBe(0);
    expect((await cli('workflow', 'start', NAME)).status).toBe(0);
    const retried = await cli('failures', 'retry', NAME, '--all');
    expect(retried.stdout.trim()).toBe(`retried 100 failed messages of '${NAME}'`);
    expect((await cli('workflow', 'status', NAME)).stdout).toContain('RUNNING');
    await expect.poll(processed, { timeout: 60_000 }).toBe(MESSAGES / 10);
    await expect.poll(async () => (await cliJson<Listing>('failures', 'list', NAME)).total).toBe(0);
    // retried, so gone: a second retry of it is refused
    const again = await cli('failures', 'retry', NAME, first.id);
    expect(again.status).not.toBe(0);
    expect(again.stderr).toContain(`no failed message '${first.id}'`);
  });

  it('refuses to retry the failed messages of a deleted workflow, and discards them', async () => {
    const name = 'Always fails';
    const file = join(files, 'always.workflow.yaml');
    writeFileSync(file, workflowText(false).replace(`name: ${NAME}`, `name: ${name}`));
    expect((await cli('workflow', 'push', file)).status).toBe(0);
    expect((await cli('workflow', 'start', name)).status).toBe(0);
    await call(executor, 'publishMessages', { workflowName: name, inlet: 'In', messages: [{ messageId: 'ten', body: { n: 10 }, headers: {} }] });
    await expect.poll(async () => (await cliJson<Listing>('failures', 'list', name)).total).toBe(1);
    const { messages } = await cliJson<Listing>('failures', 'list', name);
    const stored = messages[0]!.workflow;
    expect((await cli('workflow', 'stop', name)).status).toBe(0);
    expect((await call(executor, 'getWorkflowStatus', { name })).state).toBe(WorkflowState.WORKFLOW_STATE_STOPPED);
    expect((await cli('workflow', 'delete', name)).status).toBe(0);
    const refused = await cli('failures', 'retry', stored, '--all');
    expect(refused.status).not.toBe(0);
    expect(refused.stderr.trim().split('\n')).toHaveLength(1);
    expect(refused.stderr).toContain('was deleted');
    expect((await cliJson<Listing>('failures', 'list', stored)).total).toBe(1);
    expect((await cli('failures', 'discard', stored, '--all')).stdout.trim()).toBe(`discarded 1 failed messages of '${stored}'`);
    expect((await cliJson<Listing>('failures', 'list', stored)).total).toBe(0);
  });
});
