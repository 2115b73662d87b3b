import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliResult, type InProcessLoom, runCli, startLoom } from './loom-in-process.js';
import { runLoomBinary } from './loom-process.js';

// Issue 49 (loud failures): a port loom cannot bind stops what was starting with one line naming the setting to change.
// One real listener holds a port that every case asks for.

let blocker: Server;
let taken: number;
let loom: InProcessLoom;

beforeAll(async () => {
  blocker = createServer();
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  taken = (blocker.address() as { port: number }).port;
  loom = await startLoom(['--services', 'config-store,executor,audit', '--set', 'loom.auth.allowAnonymous=true']);
});
afterAll(async () => {
  await loom.stop();
  await new Promise((resolve) => blocker.close(resolve));
});

const loomAt = (...args: string[]): Promise<CliResult> => runCli(['--address', loom.address, ...args]);

describe('a port loom cannot bind', () => {
  // the binary, in a process of its own: its exit code and its standard error are the point
  it.each(['loom.telemetry.prometheus.port', 'server.port'])('stops `loom serve` when %s is taken: one line naming it, exit code 1', (setting) => {
    const result = runLoomBinary([
      'serve',
      '--services',
      'audit',
      '--set',
      'server.port=0',
      '--set',
      'loom.telemetry.prometheus.port=0',
      '--set',
      `${setting}=${taken}`,
    ]);
    expect(result.stderr).toBe(`loom: ${setting} ${taken} is in use (EADDRINUSE): set ${setting} to a free port\n`);
    expect(result.status).toBe(1);
    // nothing serves: the log never says it listens, nor names a scrape URL
    expect(result.stdout).not.toMatch(/loom listening/);
  });

  it('stops the start when the gRPC port is taken, naming server.port', async () => {
    const failure = startLoom(['--services', 'audit', '--set', `server.port=${taken}`]);
    await expect(failure).rejects.toThrow(`server.port ${taken} is in use (EADDRINUSE): set server.port to a free port`);
    await expect(failure).rejects.toMatchObject({ name: 'ListenError', kind: 'failed-precondition', setting: 'server.port', port: taken });
  });

  it('stops `loom serve --with-skills` and `loom skills serve` when a skill port is taken, naming the flag', async () => {
    const beside = startLoom(['--services', 'audit', '--with-skills', 'web-data', '--skill-port', `web-data=${taken}`]);
    await expect(beside).rejects.toThrow(`--skill-port web-data ${taken} is in use (EADDRINUSE): set --skill-port web-data to a free port`);

    const alone = await runCli(['skills', 'serve', '--only', 'web-data,pdf', '--port', `web-data=${taken}`, '--port', 'pdf=0']);
    expect(alone).toMatchObject({ status: 1, stderr: `loom: --port web-data ${taken} is in use (EADDRINUSE): set --port web-data to a free port\n` });
  });

  it("fails a workflow's start when its webhook's port is taken, naming the component's port option", async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'loom-listen-')), 'hook.workflow.yaml');
    writeFileSync(
      file,
      [
        'name: Taken hook',
        'components:',
        '  Intake:',
        '    kind: source.Webhook',
        `    options: { port: ${taken}, path: /in, authentication: none }`,
        '  Log: sink.Logger',
        'links: [Intake -> Log]',
        '',
      ].join('\n'),
    );
    const pushed = await loomAt('--output', 'json', 'workflow', 'push', file);
    expect(pushed.stderr).toBe('');
    const started = await loomAt('workflow', 'start', 'Taken hook');
    expect(started.status).toBe(1);
    expect(started.stderr).toMatch(
      new RegExp(
        `^loom: FAILED_PRECONDITION: .*Intake_[0-9a-f-]{36}\\.options\\.port ${taken} is in use \\(EADDRINUSE\\): set Intake_[0-9a-f-]{36}\\.options\\.port to a free port`,
      ),
    );
    const status = await loomAt('workflow', 'status', 'Taken hook', '--output', 'json');
    expect(status.stdout).not.toMatch(/"state":\s*"RUNNING"/);
  });
});
