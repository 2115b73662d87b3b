import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliResult, type InProcessLoom, runCli, startLoom } from './loom-in-process.js';

const fixture = fileURLToPath(new URL('../../../libs/domain/test/fixtures/graph-writer.workflow.json', import.meta.url));

let loom: InProcessLoom;
beforeAll(async () => {
  loom = await startLoom(['--services', 'secrets,config-store,audit', '--set', 'loom.auth.allowAnonymous=true']);
  // the fixture's graph database password is $$NEO4J_PASSWORD
  const created = await runCli(['--address', loom.address, 'variable', 'create', 'NEO4J_PASSWORD', '--encrypted'], { input: 'fixture-password\n' });
  if (created.status !== 0) throw new Error(created.stderr);
});
afterAll(async () => {
  await loom.stop();
});

const loomAt = (...args: string[]): Promise<CliResult> => runCli(['--address', loom.address, ...args]);

/** The fixture under a name of its own (`<base>_<new uuid>`), written to a file; each test pushes its own workflow. */
function fixtureCopy(base: string): { name: string; file: string } {
  const workflow = JSON.parse(readFileSync(fixture, 'utf8')) as { name: string };
  workflow.name = `${base}_${randomUUID()}`;
  const file = join(mkdtempSync(join(tmpdir(), 'loom-cli-')), `${workflow.name}.workflow.json`);
  writeFileSync(file, JSON.stringify(workflow, null, 2));
  return { name: workflow.name, file };
}

/** Pushes a fixture copy `times` times; answers its name. */
async function pushedCopy(base: string, times = 1): Promise<string> {
  const { name, file } = fixtureCopy(base);
  for (let i = 0; i < times; i++) expect((await loomAt('workflow', 'push', file)).status).toBe(0);
  return name;
}

describe('loom workflow and loom schedule', () => {
  it('pushes a workflow file and prints its name, uuid, version and whether it was stored; the same file again is unchanged', async () => {
    const { name, file } = fixtureCopy('Pushed article');
    const pushed = await loomAt('workflow', 'push', file);
    expect(pushed.stderr).toBe('');
    expect(pushed.stdout).toMatch(new RegExp(`^NAME\\s+UUID\\s+VERSION\\s+STATUS\\n${name}\\s+${name.slice(-36)}\\s+1\\s+stored\\n$`));
    // its password an encrypted variable, sealed the same each time: nothing to store
    expect((await loomAt('workflow', 'push', file)).stdout).toMatch(/\s1\s+unchanged\n$/);
    const changed = JSON.parse(readFileSync(file, 'utf8')) as { autoStart: boolean };
    writeFileSync(file, JSON.stringify({ ...changed, autoStart: !changed.autoStart }));
    expect((await loomAt('workflow', 'push', file)).stdout).toMatch(/\s2\s+stored\n$/);
  });

  it('lists and prints it by its bare name; the printed file pushes again as it is, unchanged', async () => {
    const name = await pushedCopy('Listed article');
    expect((await loomAt('workflow', 'list')).stdout).toMatch(new RegExp(`${name}\\s+1\\s+true\\s+yes`));
    const printed = await loomAt('workflow', 'get', 'Listed article');
    expect(printed.status).toBe(0);
    expect(JSON.parse(printed.stdout)).toMatchObject({ name });
    const copy = join(mkdtempSync(join(tmpdir(), 'loom-cli-')), 'copy.workflow.json');
    writeFileSync(copy, printed.stdout);
    expect(JSON.parse((await loomAt('--output', 'json', 'workflow', 'push', copy, '--expected-version', '1')).stdout)).toMatchObject({
      unchanged: true,
      summary: { version: 1 },
    });
    expect((await loomAt('workflow', 'push', copy, '--expected-version', '2')).stderr.trim()).toMatch(
      /^loom: ABORTED: workflow .* is at version 1, not the expected 2/,
    );
  });

  it('sets a schedule and refuses a bad one with the field', async () => {
    const name = await pushedCopy('Scheduled article');
    const set = await loomAt('schedule', 'set', name, '--cron', '0 */5 * * * *', '--timezone', 'Europe/Berlin', '--catch-up', 'LATEST');
    expect(set.stderr).toBe('');
    expect(JSON.parse((await loomAt('schedule', 'get', name)).stdout)).toEqual({
      enabled: true,
      cron: '0 */5 * * * *',
      timezone: 'Europe/Berlin',
      overlap: 'SKIP',
      catchUp: 'LATEST',
    });
    const bad = await loomAt('schedule', 'set', name, '--cron', '* * * * *', '--timezone', 'Europe/Berlin');
    expect(bad.status).toBe(1);
    expect(bad.stderr.trim()).toMatch(/^loom: INVALID_ARGUMENT: schedule\.cron: needs six fields/);
  });

  it('reports a malformed file with its position', async () => {
    const broken = join(mkdtempSync(join(tmpdir(), 'loom-cli-')), 'broken.workflow.json');
    writeFileSync(broken, readFileSync(fixture, 'utf8').slice(0, 200));
    const pushed = await loomAt('workflow', 'push', broken);
    expect(pushed.status).toBe(1);
    expect(pushed.stderr.trim()).toMatch(/^loom: INVALID_ARGUMENT: .*line \d+/);
  });

  it('refuses a link into a source at push, naming the link and the rule, and what it leaves unreached', async () => {
    const { name, file } = fixtureCopy('Reversed article');
    const workflow = JSON.parse(readFileSync(file, 'utf8')) as { links: { from: string; to: string }[] };
    workflow.links = workflow.links.map(({ from, to }) => ({ from: to, to: from }));
    writeFileSync(file, JSON.stringify(workflow));
    const pushed = await loomAt('workflow', 'push', file);
    expect(pushed.status).toBe(1);
    const inlet = 'Article inlet_5b2f9c1e-7a34-4d8b-b0e6-2c91a4f7d360';
    const writer = 'Graph writer_9e47d2b8-3f15-4c6a-8d90-7ab1e5c4f203';
    expect(pushed.stderr).toBe(
      `loom: INVALID_ARGUMENT: links[0]: (${writer} -> ${inlet}) links into ${inlet}, an Inlet: a source takes no messages from links; ` +
        `components[1]: ${writer} is reached from no source: link it downstream of a source, or name it as a failure handler of a component that is\n`,
    );
    expect((await loomAt('workflow', 'get', name)).stderr).toMatch(/NOT_FOUND/);
  });

  it('deletes the workflow with its files', async () => {
    const name = await pushedCopy('Deleted article');
    expect((await loomAt('workflow', 'delete', name)).status).toBe(0);
    expect((await loomAt('workflow', 'get', name)).stderr.trim()).toBe(`loom: NOT_FOUND: workflow '${name}' not found`);
  });
});
