import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliResult, type InProcessLoom, runCli, startLoom } from './loom-in-process.js';

// one loom for the file: the config store (3 versions kept), secrets, audit, and the executor and scheduler, so a
// rollback is seen to restart a running workflow as a push does
let loom: InProcessLoom;
const scratch = mkdtempSync(join(tmpdir(), 'loom-promotion-'));
const DEV_PASSWORD = 'dev-graph-password-1c9e4f7a';
const PROD_PASSWORD = 'prod-graph-password-7b3d2e8c';
const CLEAR_PASSWORD = 'clear-graph-password-5a8f0d1e';
/** A CI job's token with the viewer role: it may check a folder for drift, not apply it. */
const VIEWER_TOKEN = 'ci-viewer-token-0123456789abcdef';

beforeAll(async () => {
  loom = await startLoom([
    '--services',
    'secrets,config-store,audit,executor,scheduler',
    '--set',
    'loom.auth.allowAnonymous=true',
    '--set',
    'loom.datasource.history.keep=3',
    '--set',
    'loom.scripts.python.warmInterpreters=0',
    '--set',
    `loom.auth.tokens.ci=${VIEWER_TOKEN}`,
    '--set',
    'loom.auth.roles.ci=viewer',
  ]);
  const created = await runCli(['--address', loom.address, 'variable', 'create', 'NEO4J_PASSWORD', '--encrypted'], { input: `${DEV_PASSWORD}\n` });
  if (created.status !== 0) throw new Error(created.stderr);
});
afterAll(async () => {
  await loom.stop();
  rmSync(scratch, { recursive: true, force: true });
});

const loomAt = (...args: string[]): Promise<CliResult> => runCli(['--address', loom.address, ...args]);

/** Writes a file into the scratch folder (or a sub-folder) and answers its path. */
function write(relative: string, text: string): string {
  const path = join(scratch, relative);
  writeFileSync(path, text);
  return path;
}

/** An inlet into a logger; `level` makes versions differ. */
function logged(name: string, level: string, autoStart = true): string {
  return `name: ${name}\nautoStart: ${autoStart}\ncomponents:\n  In: source.Inlet\n  Log: { kind: sink.Logger, options: { level: ${level} } }\nlinks:\n  - In -> Log\n`;
}

/** A workflow writing to a Neo4j resource whose password is given as written (a $$ reference, or in clear). */
function graph(name: string, password: string): string {
  return `name: ${name}
autoStart: false
resources:
  Knowledge graph:
    kind: graph.Neo4jDatabase
    parameters: { host: neo4j.internal.example, port: 7687, user: loom_writer, password: "${password}", database: neo4j, read_only: false }
components:
  In: source.Inlet
  Write: { kind: persistence.GraphDatabaseWriter, options: { query: "MERGE (a:Article {id: $body.id})" }, resource: Knowledge graph }
links:
  - In -> Write
`;
}

async function ok(...args: string[]): Promise<CliResult> {
  const result = await loomAt(...args);
  expect(result.stderr, args.join(' ')).toBe('');
  expect(result.status, args.join(' ')).toBe(0);
  return result;
}

async function runId(name: string): Promise<string> {
  const status = await loomAt('--output', 'json', 'workflow', 'status', name);
  return status.status === 0 ? ((JSON.parse(status.stdout) as { runId?: string }).runId ?? '') : '';
}

describe('loom workflow history, get --version, diff and rollback', () => {
  it('lists versions with who pushed them, prints an old one and a diff, and rolls back with a restart', async () => {
    await ok('workflow', 'push', write('hist.workflow.yaml', logged('hist', 'warn')));
    await expect.poll(() => runId('hist')).not.toBe('');
    const firstRun = await runId('hist');
    await ok('workflow', 'push', write('hist.workflow.yaml', logged('hist', 'error')));
    await expect.poll(() => runId('hist')).not.toBe(firstRun);
    const secondRun = await runId('hist');

    const history = await ok('workflow', 'history', 'hist');
    const lines = history.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^VERSION\s+TIME\s+SHA256\s+PUSHEDBY\s+CURRENT$/);
    // the pusher is the audit event's actor: an anonymous caller here
    expect(lines.slice(1).map((line) => line.split(/\s+/).filter((word) => !/^[0-9a-f]{64}$/.test(word) && !/^\d{4}-/.test(word)))).toEqual([
      ['2', 'anonymous', 'yes'],
      ['1', 'anonymous'],
    ]);

    const old = JSON.parse((await ok('--output', 'json', 'workflow', 'get', 'hist', '--version', '1')).stdout) as { metadata: { version: number } };
    expect(old.metadata.version).toBe(1);
    expect((await ok('workflow', 'get', 'hist', '--version', '1')).stdout).toContain('"value": "warn"');

    const diff = await ok('workflow', 'diff', 'hist', '1', '2');
    expect(diff.stdout).toMatch(/^--- hist_[0-9a-f-]+ version 1\n\+\+\+ hist_[0-9a-f-]+ version 2\n/);
    expect(diff.stdout).toMatch(/^-.*level: warn/m);
    expect(diff.stdout).toMatch(/^\+.*level: error/m);

    const rolled = await ok('--output', 'json', 'workflow', 'rollback', 'hist', '--to', '1');
    expect(JSON.parse(rolled.stdout)).toMatchObject({ metadata: { version: 3 }, unchanged: false });
    expect((await ok('workflow', 'get', 'hist')).stdout).toContain('"value": "warn"');
    // a running workflow restarts on the new version, as on a push
    await expect.poll(() => runId('hist')).not.toBe(secondRun);
    const audit = await ok('--output', 'json', 'audit', 'tail', '-n', '50', '--type', 'WORKFLOW_CONFIG_PUSHED');
    expect(audit.stdout).toContain('"rolledBackTo":"1"');
  });

  it('refuses a diff of a missing version and a rollback to a pruned one, changing nothing', async () => {
    for (const level of ['info', 'warn', 'error', 'debug']) await ok('workflow', 'push', write('pruned.workflow.yaml', logged('pruned', level, false)));
    const missing = await loomAt('workflow', 'diff', 'pruned', '2', '9');
    expect(missing.status).toBe(1);
    expect(missing.stderr.trim()).toMatch(/^loom: NOT_FOUND: workflow 'pruned_[0-9a-f-]+' has no version 9; versions 2 to 4 are kept$/);
    const pruned = await loomAt('workflow', 'rollback', 'pruned', '--to', '1');
    expect(pruned.status).toBe(1);
    expect(pruned.stderr.trim()).toMatch(
      /^loom: NOT_FOUND: version 1 of workflow 'pruned_[0-9a-f-]+' was pruned: the config store keeps the last 3 \(loom\.datasource\.history\.keep\); versions 2 to 4 are kept$/,
    );
    const history = await ok('--output', 'json', 'workflow', 'history', 'pruned');
    expect((JSON.parse(history.stdout) as { versions: { version: number }[] }).versions.map((row) => row.version)).toEqual([4, 3, 2]);
    const usage = await loomAt('workflow', 'diff', 'pruned', '0', '2');
    expect(usage.status).not.toBe(0);
  });
});

describe('loom workflow export --all and apply', () => {
  it('exports every workflow and schedule with $$ references and never a secret, and applies the folder back unchanged', async () => {
    await ok('workflow', 'push', write('graph.workflow.yaml', graph('graph', '$$NEO4J_PASSWORD')));
    await ok('workflow', 'push', write('clear.workflow.yaml', graph('clear', CLEAR_PASSWORD)));
    await ok('schedule', 'set', 'graph', '--cron', '0 0 3 * * *', '--timezone', 'Europe/Berlin', '--disabled');

    const folder = join(scratch, 'promoted');
    const exported = await loomAt('workflow', 'export', '--all', '--compact', folder);
    expect(exported.status).toBe(0);
    // the value sealed at push is not written: a reference to a variable each environment must have
    expect(exported.stderr.trim()).toBe(
      'loom: clear: resources[0].parameters.password was sealed at push, not a $$ reference; written as $$CLEAR_KNOWLEDGE_GRAPH_PASSWORD: create that variable in each environment',
    );
    const files = readdirSync(folder).sort();
    expect(files).toEqual(expect.arrayContaining(['clear.workflow.yaml', 'graph.scheduler.json', 'graph.workflow.yaml', 'hist.workflow.yaml']));
    const texts = files.map((file) => readFileSync(join(folder, file), 'utf8')).join('\n');
    for (const secret of [DEV_PASSWORD, CLEAR_PASSWORD, '###AES-']) expect(texts).not.toContain(secret);
    expect(readFileSync(join(folder, 'graph.workflow.yaml'), 'utf8')).toMatch(/^name: graph$/m);
    expect(readFileSync(join(folder, 'graph.workflow.yaml'), 'utf8')).toContain('password: $$NEO4J_PASSWORD');
    expect(readFileSync(join(folder, 'clear.workflow.yaml'), 'utf8')).toContain('password: $$CLEAR_KNOWLEDGE_GRAPH_PASSWORD');
    expect(JSON.parse(readFileSync(join(folder, 'graph.scheduler.json'), 'utf8'))).toMatchObject({ cron: '0 0 3 * * *', enabled: false });

    const check = await ok('workflow', 'apply', folder, '--check');
    expect(check.stdout).not.toMatch(/^(added|changed|removed)\b/m);
    expect(check.stdout).toMatch(/^unchanged\s+graph\.workflow\.yaml\s+graph_[0-9a-f-]+\s+unchanged$/m);
    await ok('workflow', 'delete', 'clear');
  });

  it('plans a change, applies it with --yes only, and exits 1 on drift with --check', async () => {
    const folder = join(scratch, 'changed');
    await ok('workflow', 'export', '--all', '--compact', folder);
    writeFileSync(join(folder, 'hist.workflow.yaml'), logged('hist', 'debug'));
    const before = (JSON.parse((await ok('--output', 'json', 'workflow', 'history', 'hist')).stdout) as { versions: unknown[] }).versions.length;

    const drift = await loomAt('workflow', 'apply', folder, '--check');
    expect(drift.status).toBe(1);
    expect(drift.stdout).toMatch(/^changed\s+hist\.workflow\.yaml\s+hist_[0-9a-f-]+\s+\+1 -1/m);
    const plan = await ok('workflow', 'apply', folder, '--diff');
    expect(plan.stdout).toMatch(/^\+.*level: debug/m);
    expect(plan.stdout).toContain('plan only: nothing applied (run again with --yes to apply it)');
    expect((JSON.parse((await ok('--output', 'json', 'workflow', 'history', 'hist')).stdout) as { versions: unknown[] }).versions).toHaveLength(before);

    // a viewer's token (a CI job's) may check for drift, and may not apply
    const viewerCheck = await loomAt('--token', VIEWER_TOKEN, 'workflow', 'apply', folder, '--check');
    expect([viewerCheck.status, viewerCheck.stderr]).toEqual([1, '']);
    const viewerApply = await loomAt('--token', VIEWER_TOKEN, 'workflow', 'apply', folder, '--yes');
    expect(viewerApply.status).toBe(1);
    expect(viewerApply.stderr).toMatch(/^loom: PERMISSION_DENIED: /);

    const applied = await ok('workflow', 'apply', folder, '--yes');
    expect(applied.stdout).toContain('applied');
    expect((await ok('workflow', 'get', 'hist')).stdout).toContain('"value": "debug"');
    expect((await ok('workflow', 'apply', folder, '--check')).status).toBe(0);
  });

  it('applies nothing when a file links to an unknown component, listing every error of every file with its file and line', async () => {
    const folder = join(scratch, 'invalid');
    await ok('workflow', 'export', '--all', '--compact', folder);
    writeFileSync(join(folder, 'hist.workflow.yaml'), logged('hist', 'trace'));
    write(
      'invalid/broken.workflow.yaml',
      'name: broken\ncomponents:\n  In: source.Inlet\n  Out: sink.Logger\nlinks:\n  - In -> Nowhere\n  - In -> Elsewhere\n',
    );
    const version = (await ok('--output', 'json', 'workflow', 'history', 'hist')).stdout;

    const refused = await loomAt('workflow', 'apply', folder, '--yes');
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(/^loom: INVALID_ARGUMENT: /);
    // every error of every file, each with its file and line: both unknown link targets, and hist's level 'trace'
    expect(refused.stderr).toContain('workflows[0].links[0].to: names no component of this workflow (line 6 of broken.workflow.yaml)');
    expect(refused.stderr).toContain('workflows[0].links[1].to: names no component of this workflow (line 7 of broken.workflow.yaml)');
    expect(refused.stderr).toMatch(/workflows\[\d\]\.components\.Log\.options\.level: option 'level' must be one of: .* \(line 5 of hist\.workflow\.yaml\)/);
    expect((await ok('--output', 'json', 'workflow', 'history', 'hist')).stdout).toBe(version);
    expect((await loomAt('workflow', 'list')).stdout).not.toContain('broken_');
  });

  it('refuses a folder with two files for one workflow', async () => {
    const folder = join(scratch, 'twice');
    await ok('workflow', 'export', '--all', '--compact', folder);
    write('twice/hist-copy.workflow.yaml', logged('hist', 'warn'));
    const refused = await loomAt('workflow', 'apply', folder);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(/hist-copy\.workflow\.yaml|hist\.workflow\.yaml/);
    expect(refused.stderr).toContain('one file per workflow');
  });

  it('applies the same folder to an environment without the workflows and with its own variable values', async () => {
    const folder = join(scratch, 'production');
    await ok('workflow', 'export', '--all', '--compact', folder);
    for (const file of readdirSync(folder).filter((name) => name !== 'graph.workflow.yaml' && name !== 'graph.scheduler.json')) rmSync(join(folder, file));
    // "production": the workflow is not there, and NEO4J_PASSWORD has this environment's value
    await ok('workflow', 'delete', 'graph');
    const updated = await runCli(['--address', loom.address, 'variable', 'update', 'NEO4J_PASSWORD', '--value-file', '-', '--encrypted'], {
      input: `${PROD_PASSWORD}\n`,
    });
    expect(updated.status, updated.stderr).toBe(0);
    const plan = await ok('workflow', 'apply', folder);
    expect(plan.stdout).toMatch(/^added\s+graph\.workflow\.yaml\s+graph_[0-9a-f-]+\s+added$/m);
    await ok('workflow', 'apply', folder, '--yes');
    const stored = await ok('workflow', 'get', 'graph');
    expect(stored.stdout).toContain('###AES-');
    expect(stored.stdout).not.toContain(PROD_PASSWORD);
    expect(JSON.parse((await ok('schedule', 'get', 'graph')).stdout)).toMatchObject({ cron: '0 0 3 * * *' });
    expect(existsSync(join(folder, 'graph.workflow.yaml'))).toBe(true);
  });
});
