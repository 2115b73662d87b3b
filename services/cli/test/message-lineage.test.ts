import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ExecutorClient, WorkflowState } from '@loom/contracts';
import { call, createClient } from '@loom/service-kit';
import { checkedWorkflowText } from '@loom/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type InProcessLoom, runCli, startLoom } from './loom-in-process.js';

/**
 * Issue 50, lineage: `loom message trace ID` on a message that failed once (a script refuses it), was kept in the
 * failure store, and succeeded when retried from there after the fix; the ids the failure store and the trace name
 * match. A message never seen, and one past the trail's bound, are answered NOT_FOUND saying so. One loom in memory mode,
 * its trail bounded to 5 messages per workflow.
 */
const NAME = 'Lineage';
const OPERATOR = 'operator-token-0123456789';
const VIEWER = 'viewer-token-0123456789';
const SETTINGS = [
  ...['loom.experimental.enabled=true', 'loom.log.level=warn', 'loom.scripts.python.warmInterpreters=0', 'loom.executor.messageTrace.maxMessages=5'],
  // the stop's drain outlasts a loaded machine's pause between a run being seen STOPPING and the start refused meanwhile
  'server.shutdown.deadlineMs=120000',
  ...[`loom.auth.tokens.ops=${OPERATOR}`, 'loom.auth.roles.ops=admin', `loom.auth.tokens.dana=${VIEWER}`, 'loom.auth.roles.dana=viewer'],
].flatMap((setting) => ['--set', setting]);

function workflowText(fixed: boolean): string {
  const script = fixed ? 'return { ...body, ok: true };' : "if (body.n === 3) throw new Error('three is refused'); return { ...body, ok: true };";
  return checkedWorkflowText(NAME, script);
}

interface TracedEvent {
  readonly kind: string;
  readonly component: string;
  readonly messageId: string;
  readonly outputIds: string[];
  readonly attempt: number;
  readonly failure?: { kind: string; retryable: boolean; message: string };
  readonly failureHandler: string;
  readonly workflowVersion: number;
  readonly time: string;
}

let data: string;
let loom: InProcessLoom;
let executor: ExecutorClient;

const cli = (...args: string[]): ReturnType<typeof runCli> => runCli(['--address', loom.address, '--token', OPERATOR, ...args]);

async function cliJson<T>(...args: string[]): Promise<T> {
  const result = await cli('--output', 'json', ...args);
  expect(result.stderr, result.stderr).toBe('');
  expect(result.status).toBe(0);
  return JSON.parse(result.stdout) as T;
}

async function processed(): Promise<number> {
  const status = await call(executor, 'getWorkflowStatus', { name: NAME });
  return status.components.find((component) => component.name.startsWith('Done'))?.messagesIn ?? 0;
}

const publish = (from: number, to: number) =>
  call(executor, 'publishMessages', {
    workflowName: NAME,
    inlet: 'In',
    messages: Array.from({ length: to - from + 1 }, (_, index) => ({ messageId: `m-${from + index}`, body: { n: from + index }, headers: {} })),
  });

beforeAll(async () => {
  data = mkdtempSync(join(tmpdir(), 'loom-lineage-'));
  loom = await startLoom([...SETTINGS, '--set', `loom.data.directory=${data}`]);
  executor = createClient(ExecutorClient, loom.address, { retry: false, deadlineMs: 60_000, token: OPERATOR });
});
afterAll(async () => {
  executor?.close();
  await loom?.stop();
  rmSync(data, { recursive: true, force: true });
});

describe('loom message trace', () => {
  it('shows a message that failed, was kept, and succeeded when retried from the failure store; unknown and evicted ids are NOT_FOUND', async () => {
    const file = join(data, 'lineage.workflow.yaml');
    writeFileSync(file, workflowText(false));
    expect((await cli('workflow', 'push', file)).status).toBe(0);
    expect((await cli('workflow', 'start', NAME)).status).toBe(0);
    await publish(1, 5);
    await expect.poll(processed, { timeout: 30_000 }).toBe(4);

    // a message that went through: taken in, transformed (its output keeps its id), consumed by the sink
    const passed = await cliJson<{ messageId: string; events: TracedEvent[]; maxMessages: number }>('message', 'trace', 'm-2');
    expect(passed.events.map((event) => [event.kind, event.component, event.messageId])).toStrictEqual([
      ['accepted', 'In', 'm-2'],
      ['processed', 'Check', 'm-2'],
      ['processed', 'Done', 'm-2'],
    ]);
    expect(passed.events[1]!.outputIds).toStrictEqual(['m-2']);
    expect(passed.maxMessages).toBe(5);

    // the failed one: the failure store names the same message id the trace answers to
    const failures = await cliJson<{ messages: { id: string; messageId: string }[] }>('failures', 'list', NAME);
    expect(failures.messages.map((failed) => failed.messageId)).toStrictEqual(['m-3']);

    // the fix, pushed; the new version's run retries it from the failure store
    expect((await cli('workflow', 'stop', NAME)).status).toBe(0);
    writeFileSync(file, workflowText(true));
    expect((await cli('workflow', 'push', file)).status).toBe(0);
    expect((await cli('workflow', 'start', NAME)).status).toBe(0);
    expect((await cli('failures', 'retry', NAME, '--all')).status).toBe(0);
    await expect.poll(processed, { timeout: 30_000 }).toBe(1);

    const traced = await cliJson<{ events: TracedEvent[] }>('message', 'trace', 'm-3', '--workflow', NAME);
    expect(traced.events.map((event) => [event.kind, event.component, event.workflowVersion])).toStrictEqual([
      ['accepted', 'In', 1],
      ['failed', 'Check', 1],
      ['retried', 'Check', 2],
      ['processed', 'Check', 2],
      ['processed', 'Done', 2],
    ]);
    expect(traced.events[1]).toMatchObject({ attempt: 1, failureHandler: '', failure: { kind: 'invalid-argument', retryable: false } });
    expect(traced.events[1]!.failure!.message).toContain('three is refused');
    const times = traced.events.map((event) => Date.parse(event.time));
    expect(times).toStrictEqual([...times].sort((a, b) => a - b));

    // in text, as an operator reads it; a viewer may trace too (metadata only)
    const text = await runCli(['--address', loom.address, '--token', VIEWER, 'message', 'trace', 'm-3']);
    expect(text.stderr).toBe('');
    expect(text.stdout).toContain("message 'm-3' in Lineage: 5 events");
    expect(text.stdout).toMatch(/failed\s+Check\s+m-3\s+1\s+1\s+invalid-argument: .*three is refused.* \(to the failure store\)/);
    expect(text.stdout).toMatch(/retried\s+Check\s+m-3/);

    // never seen: NOT_FOUND, one line, naming the bounds
    const unknown = await cli('message', 'trace', 'never-seen');
    expect(unknown.status).not.toBe(0);
    expect(unknown.stderr.trim().split('\n')).toHaveLength(1);
    expect(unknown.stderr).toContain("no events of message 'never-seen'");
    expect(unknown.stderr).toContain('loom.executor.messageTrace.maxMessages 5 per workflow');

    // past the bound: a sixth message makes room by forgetting the oldest, m-1
    await publish(6, 6);
    await expect.poll(processed, { timeout: 30_000 }).toBe(2);
    const evicted = await cli('message', 'trace', 'm-1', '--workflow', NAME);
    expect(evicted.status).not.toBe(0);
    expect(evicted.stderr).toContain(`no events of message 'm-1' in workflow '${NAME}'`);
    expect(evicted.stderr).toContain('past the retention');
    expect((await cli('message', 'trace', 'm-6')).status).toBe(0);

    const missing = await cli('message', 'trace', ' ');
    expect(missing.stderr).toContain('message_id: is required');
  });
});

/** A workflow whose enricher calls `url` for each message: In → Ask → Done. */
function askingWorkflowText(name: string, url: string): string {
  return [
    `name: ${name}`,
    'components:',
    '  In: source.Inlet',
    '  Ask:',
    '    kind: processor.HttpEnricher',
    '    options:',
    `      url: ${JSON.stringify(url)}`,
    '      target_field: answer',
    '  Done: sink.Logger',
    'links:',
    '  - In -> Ask -> Done',
    '',
  ].join('\n');
}

describe('loom stopping', () => {
  it('audits the stop of the run it stops as it shuts down, while the audit service still answers, and starts no run meanwhile', async () => {
    // a run whose message is held by its HTTP endpoint: loom's stop waits for it, its services still answering
    const held: (() => void)[] = [];
    let asked!: () => void;
    const reached = new Promise<void>((resolve) => (asked = resolve));
    const endpoint = createServer((_request, response) => {
      held.push(() => response.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'));
      asked();
    });
    await new Promise<void>((resolve) => endpoint.listen(0, '127.0.0.1', resolve));
    const { port } = endpoint.address() as AddressInfo;
    try {
      for (const [name, text] of [
        ['Held', askingWorkflowText('Held', `http://127.0.0.1:${port}/ask`)],
        ['Late', checkedWorkflowText('Late', 'return body;')],
      ] as const) {
        const file = join(data, `${name}.workflow.yaml`);
        writeFileSync(file, text);
        expect((await cli('workflow', 'push', file)).status).toBe(0);
      }
      expect((await cli('workflow', 'start', 'Held')).status).toBe(0);
      await call(executor, 'publishMessages', { workflowName: 'Held', inlet: 'In', messages: [{ messageId: 'h-1', body: { n: 1 }, headers: {} }] });
      await reached;

      const stopped = loom.stop();
      await expect
        .poll(async () => (await call(executor, 'getWorkflowStatus', { name: 'Held' })).state, { timeout: 30_000 })
        .toBe(WorkflowState.WORKFLOW_STATE_STOPPING);
      const late = await cli('workflow', 'start', 'Late');
      expect(late.status).not.toBe(0);
      expect(late.stderr).toContain("loom is stopping: workflow 'Late' was not started");
      for (const answer of held.splice(0)) answer();
      await stopped;
    } finally {
      for (const answer of held.splice(0)) answer();
      endpoint.close();
    }
    const records = readFileSync(join(data, 'audit.log'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { type: string; workflow: string; actor: string });
    const ofLineage = records.filter((record) => record.workflow.startsWith(`${NAME}_`)).map((record) => [record.type, record.actor]);
    // the first version's run, stopped by the operator for the push of the fix; the fixed one's, stopped by loom itself
    expect(ofLineage.filter(([type]) => type === 'WORKFLOW_STOP')).toStrictEqual([
      ['WORKFLOW_STOP', 'ops'],
      ['WORKFLOW_STOP', 'executor'],
    ]);
    expect(records.at(-1)).toMatchObject({ type: 'WORKFLOW_STOP', actor: 'executor' });
    // the held run stopped by loom, audited; the late one pushed and never started
    const of = (prefix: string): string[][] => records.filter((record) => record.workflow.startsWith(prefix)).map((record) => [record.type, record.actor]);
    expect(of('Held_')).toStrictEqual([
      ['WORKFLOW_CONFIG_PUSHED', 'ops'],
      ['WORKFLOW_START', 'ops'],
      ['WORKFLOW_STOP', 'executor'],
    ]);
    expect(of('Late_')).toStrictEqual([['WORKFLOW_CONFIG_PUSHED', 'ops']]);
    expect(loom.logLines.filter((line) => line.includes('audit event not written'))).toStrictEqual([]);
  });
});
