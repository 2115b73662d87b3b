import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { derivedInstanceName } from '@loom/domain';
import { EXECUTOR_STACK_ARGUMENTS } from '@loom/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliResult, type InProcessLoom, runCli, startLoom } from './loom-in-process.js';

let loom: InProcessLoom;
let scratch: string;
beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'loom-cli-watch-'));
  loom = await startLoom([...EXECUTOR_STACK_ARGUMENTS]);
});
afterAll(async () => {
  await loom.stop();
  rmSync(scratch, { recursive: true, force: true });
});

const loomAt = (...args: string[]): Promise<CliResult> => runCli(['--address', loom.address, ...args]);

const NAME = 'Vanishing inbox';
const READER = derivedInstanceName(NAME, 'component', 'Files');

describe('loom workflow watch', () => {
  it('prints the failure a run ended with, its kind, retryable flag and cause, and exits 1 once the run failed', async () => {
    const inbox = join(scratch, 'inbox');
    mkdirSync(inbox);
    const file = join(scratch, 'vanishing.workflow.yaml');
    writeFileSync(
      file,
      [
        `name: ${NAME}`,
        'components:',
        '  Files:',
        '    kind: source.FileReader',
        '    options:',
        `      directory: ${JSON.stringify(inbox)}`,
        '  Log: sink.Logger',
        'links:',
        '  - Files -> Log',
        '',
      ].join('\n'),
    );
    expect((await loomAt('workflow', 'push', file)).status).toBe(0);
    expect((await loomAt('workflow', 'start', NAME)).status).toBe(0);
    // the source dies with its directory, and the run with it
    rmSync(inbox, { recursive: true });
    await expect
      .poll(async () => (JSON.parse((await loomAt('--output', 'json', 'workflow', 'status', NAME)).stdout) as { state: string }).state)
      .toBe('FAILED');

    // a watcher that comes after the end is told the state and the failure at once, and the stream ends
    const message = `${READER}.options.directory: '${inbox}' is not an existing directory`;
    const watched = await loomAt('workflow', 'watch', NAME);
    expect(watched.stderr).toBe('');
    expect(watched.status).toBe(1);
    // one line: the event's time, then its state, error, and the failure typed
    expect(watched.stdout.slice(0, 24)).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(watched.stdout.slice(24)).toBe(
      `  FAILED  error=${JSON.stringify(`component '${READER}' failed: ${message}`)}` +
        `  kind=failed-precondition  retryable=true  cause=${JSON.stringify(`DirectoryNotFoundError: ${message}`)}\n`,
    );

    const json = await loomAt('--output', 'json', 'workflow', 'watch', NAME);
    expect(json.status).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({
      state: 'FAILED',
      failure: { kind: 'failed-precondition', retryable: true, message, cause: `DirectoryNotFoundError: ${message}` },
    });
  });
});
