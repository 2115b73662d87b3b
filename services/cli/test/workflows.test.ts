import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LoomProcess, runLoom, startLoom } from './loom-process.js';

const fixture = fileURLToPath(new URL('../../../libs/domain/test/fixtures/graph-writer.workflow.json', import.meta.url));
const NAME = 'Article import_3d6f1b2a-94c8-4e7d-a5b1-6c0e8f2d9a17';

let loom: LoomProcess;
beforeAll(async () => {
  loom = await startLoom(['--services', 'secrets,config-store,audit', '--set', 'loom.auth.allowAnonymous=true']);
  // the fixture's graph database password is $$NEO4J_PASSWORD
  const created = runLoom(['--address', loom.address, 'variable', 'create', 'NEO4J_PASSWORD', '--encrypted'], {}, 'fixture-password\n');
  if (created.status !== 0) throw new Error(created.stderr);
});
afterAll(async () => {
  loom.child.kill('SIGTERM');
  await loom.exited;
});

const loomAt = (...args: string[]): ReturnType<typeof runLoom> => runLoom(['--address', loom.address, ...args]);

describe('loom workflow and loom schedule', () => {
  it('pushes a workflow file and prints its name, uuid and version', () => {
    const pushed = loomAt('workflow', 'push', fixture);
    expect(pushed.stderr).toBe('');
    expect(pushed.stdout).toMatch(new RegExp(`^NAME\\s+UUID\\s+VERSION\\n${NAME}\\s+3d6f1b2a-94c8-4e7d-a5b1-6c0e8f2d9a17\\s+1\\n$`));
    expect(loomAt('workflow', 'push', fixture).stdout).toMatch(/\s2\n$/);
  });

  it('lists, prints and deletes it; the printed file pushes again as it is', () => {
    expect(loomAt('workflow', 'list').stdout).toMatch(new RegExp(`${NAME}\\s+2\\s+true\\s+yes`));
    const printed = loomAt('workflow', 'get', 'Article import');
    expect(printed.status).toBe(0);
    expect(JSON.parse(printed.stdout)).toMatchObject({ name: NAME });
    const copy = join(mkdtempSync(join(tmpdir(), 'loom-cli-')), 'copy.workflow.json');
    writeFileSync(copy, printed.stdout);
    expect(loomAt('workflow', 'push', copy, '--expected-version', '2').status).toBe(0);
    expect(loomAt('workflow', 'push', copy, '--expected-version', '2').stderr.trim()).toMatch(
      /^loom: ABORTED: workflow .* is at version 3, not the expected 2/,
    );
  });

  it('sets a schedule and refuses a bad one with the field', () => {
    const set = loomAt('schedule', 'set', NAME, '--cron', '0 */5 * * * *', '--timezone', 'Europe/Berlin', '--catch-up', 'LATEST');
    expect(set.stderr).toBe('');
    expect(JSON.parse(loomAt('schedule', 'get', NAME).stdout)).toEqual({
      enabled: true,
      cron: '0 */5 * * * *',
      timezone: 'Europe/Berlin',
      overlap: 'SKIP',
      catchUp: 'LATEST',
    });
    const bad = loomAt('schedule', 'set', NAME, '--cron', '* * * * *', '--timezone', 'Europe/Berlin');
    expect(bad.status).toBe(1);
    expect(bad.stderr.trim()).toMatch(/^loom: INVALID_ARGUMENT: schedule\.cron: needs six fields/);
  });

  it('reports a malformed file with its position before sending anything', () => {
    const broken = join(mkdtempSync(join(tmpdir(), 'loom-cli-')), 'broken.workflow.json');
    writeFileSync(broken, readFileSync(fixture, 'utf8').slice(0, 200));
    const pushed = loomAt('workflow', 'push', broken);
    expect(pushed.status).toBe(1);
    expect(pushed.stderr.trim()).toMatch(/^loom: INVALID_ARGUMENT: .*line \d+/);
  });

  it('deletes the workflow with its files', () => {
    expect(loomAt('workflow', 'delete', NAME).status).toBe(0);
    expect(loomAt('workflow', 'get', NAME).stderr.trim()).toBe(`loom: NOT_FOUND: workflow '${NAME}' not found`);
  });
});
