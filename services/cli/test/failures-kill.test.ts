import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ExecutorClient } from '@loom/contracts';
import { call, createClient } from '@loom/service-kit';
import { checkedWorkflowText } from '@loom/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './loom-in-process.js';
import { type LoomProcess, startLoomProcess, stopLoom } from './loom-process.js';

/**
 * Issue 50, memory mode: a failed message counts as failed once its line is written to the failure store's file,
 * before the file's fsync (`loom.executor.failures.syncIntervalMs`, an hour here, so none happens in the test). The
 * `loom` binary is SIGKILLed then; the one restarted on the same data directory lists every failure. (A power loss
 * before the fsync is what the interval trades; no machine here can cut its own power.)
 */
const MESSAGES = 200;
const NAME = 'Tenth fails';
const OPERATOR = 'operator-token-0123456789';

let data: string;
let loom: LoomProcess | undefined;
beforeAll(() => {
  data = mkdtempSync(join(tmpdir(), 'loom-failures-kill-'));
});
afterAll(async () => {
  await stopLoom(loom);
  rmSync(data, { recursive: true, force: true });
});

function startOn(directory: string): Promise<LoomProcess> {
  const settings = [
    'loom.experimental.enabled=true',
    'loom.scripts.python.warmInterpreters=0',
    `loom.auth.tokens.ops=${OPERATOR}`,
    'loom.auth.roles.ops=admin',
    `loom.data.directory=${directory}`,
    'loom.executor.failures.syncIntervalMs=3600000',
  ];
  return startLoomProcess(settings.flatMap((setting) => ['--set', setting]));
}

async function failureIds(address: string): Promise<string[]> {
  const listed = await runCli(['--address', address, '--token', OPERATOR, '--output', 'json', 'failures', 'list', NAME, '--limit', '1000']);
  expect(listed.stderr, listed.stderr).toBe('');
  return (JSON.parse(listed.stdout) as { messages: { id: string }[] }).messages.map((message) => message.id).sort();
}

describe('the failure store in memory mode, loom SIGKILLed before the fsync', () => {
  it('keeps every failure written before the kill', async () => {
    loom = await startOn(data);
    const cli = (...args: string[]) => runCli(['--address', loom!.address, '--token', OPERATOR, ...args]);
    const file = join(data, 'tenth.workflow.yaml');
    writeFileSync(file, checkedWorkflowText(NAME, "if (body.n % 10 === 0) throw new Error('the tenth message ' + body.n); return { ...body, ok: true };"));
    expect((await cli('workflow', 'push', file)).stderr).toBe('');
    expect((await cli('workflow', 'start', NAME)).status).toBe(0);
    const executor = createClient(ExecutorClient, loom.address, { retry: false, deadlineMs: 60_000, token: OPERATOR });
    const messages = Array.from({ length: MESSAGES }, (_, index) => ({ messageId: `m-${index + 1}`, body: { n: index + 1 }, headers: {} }));
    await call(executor, 'publishMessages', { workflowName: NAME, inlet: 'In', messages });
    executor.close();
    await expect.poll(async () => (await failureIds(loom!.address)).length, { timeout: 60_000 }).toBe(MESSAGES / 10);
    const kept = await failureIds(loom.address);

    loom.child.kill('SIGKILL');
    expect((await loom.exited).signal).toBe('SIGKILL');
    loom = await startOn(data);
    expect(await failureIds(loom.address)).toEqual(kept);
  });
});
