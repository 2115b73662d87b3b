import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '@loom/config';
import { ApplyAction, AuditEventType, WorkflowEventType, type WatchWorkflowsResponse } from '@loom/contracts';
import { workflowFromProto } from '@loom/domain/proto';
import { call, fieldViolationsOf } from '@loom/service-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditedEvents, failure, type Scratch, scratch, startStore, status, storedFiles, type StoreHarness } from './harness.js';

const PLAIN = 'history-password-8c1f0e2b-never-in-a-file';
/** Versions kept in this file's store (loom.datasource.history.keep). */
const KEEP = 3;

/** A compact workflow with a Neo4j resource whose password is a `$$` reference; `n` makes each version differ. */
function compact(name: string, n: number, password = '$$NEO4J_PASSWORD'): string {
  return `name: ${name}
resources:
  Knowledge graph:
    kind: graph.Neo4jDatabase
    parameters: { host: neo4j.internal.example, port: 7687, user: loom_writer, password: "${password}", database: neo4j, read_only: false }
components:
  In: source.Inlet
  Write:
    kind: persistence.GraphDatabaseWriter
    options: { query: "MERGE (a:Article {id: $body.id}) SET a.n = ${n}" }
    resource: Knowledge graph
links:
  - In -> Write
`;
}

function push(harness: StoreHarness, name: string, n: number) {
  return call(harness.store, 'putWorkflow', { compact: compact(name, n), sourceName: `${name}.workflow.yaml` });
}

function queryOf(workflow: ReturnType<typeof workflowFromProto>): unknown {
  return workflow.components.flatMap((component) => component.options).find((option) => option.name === 'query')?.value;
}

describe('loom.datasource.history.keep', () => {
  it('defaults to 50 and refuses a count below 1 or not a whole number, naming the key', () => {
    expect(loadConfig({ env: {} }).datasource.history.keep).toBe(50);
    expect(loadConfig({ env: { LOOM_DATASOURCE_HISTORY_KEEP: '7' } }).datasource.history.keep).toBe(7);
    for (const bad of ['0', '2.5', 'many']) {
      expect(() => loadConfig({ env: { LOOM_DATASOURCE_HISTORY_KEEP: bad } })).toThrow(ConfigError);
      expect(() => loadConfig({ env: { LOOM_DATASOURCE_HISTORY_KEEP: bad } })).toThrow(/loom\.datasource\.history\.keep/);
    }
  });
});

describe('kept versions, diff and rollback', () => {
  const dirs: Scratch = scratch();
  let harness: StoreHarness;

  beforeAll(async () => {
    harness = await startStore(dirs, [`loom.datasource.history.keep=${KEEP}`]);
    await call(harness.secrets, 'createVariable', { key: 'NEO4J_PASSWORD', value: PLAIN, encrypted: true, userUuid: '' });
  });
  afterAll(async () => {
    await harness.stop();
    rmSync(dirs.root, { recursive: true, force: true });
  });

  it('keeps every version up to the configured count, newest first, and prunes the older ones from disk', async () => {
    for (let n = 1; n <= 5; n++) await push(harness, 'kept', n);
    const { name, versions, oldestKept } = await call(harness.store, 'listWorkflowVersions', { name: 'kept' });
    expect(versions.map((version) => version.version)).toEqual([5, 4, 3]);
    expect(oldestKept).toBe(3);
    for (const version of versions) expect(version.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(new Set(versions.map((version) => version.sha256)).size).toBe(3);
    expect(readdirSync(join(dirs.workflows, '.history', name)).sort()).toEqual(
      ['3.json', '3.workflow.json', '4.json', '4.workflow.json', '5.json', '5.workflow.json'].sort(),
    );

    const { workflow, metadata, variableReferences } = await call(harness.store, 'getWorkflow', { name: 'kept', version: 4 });
    expect(metadata?.version).toBe(4);
    expect(queryOf(workflowFromProto(workflow!))).toContain('a.n = 4');
    // the listed resource and its copy in the writer
    expect(variableReferences).toEqual({
      'resources[0].parameters.password': 'NEO4J_PASSWORD',
      'components[1].resource.parameters.password': 'NEO4J_PASSWORD',
    });
    // the kept files hold the password only sealed, like the workflow's own
    for (const file of storedFiles(dirs.workflows)) expect(readFileSync(join(dirs.workflows, file), 'utf8'), file).not.toContain(PLAIN);
  });

  it('says which versions are kept for a pruned version and for one the workflow never had', async () => {
    for (let n = 1; n <= 5; n++) await push(harness, 'pruned', n);
    const pruned = await failure(call(harness.store, 'getWorkflow', { name: 'pruned', version: 1 }));
    expect(pruned.code).toBe(status.NOT_FOUND);
    expect(pruned.details).toMatch(
      /version 1 of workflow 'pruned_[0-9a-f-]+' was pruned: the config store keeps the last 3 \(loom\.datasource\.history\.keep\); versions 3 to 5 are kept/,
    );
    const never = await failure(call(harness.store, 'diffWorkflowVersions', { name: 'pruned', fromVersion: 3, toVersion: 9 }));
    expect(never.code).toBe(status.NOT_FOUND);
    expect(never.details).toMatch(/has no version 9; versions 3 to 5 are kept/);
    const zero = await failure(call(harness.store, 'diffWorkflowVersions', { name: 'pruned', fromVersion: 0, toVersion: 5 }));
    expect(zero.code).toBe(status.INVALID_ARGUMENT);
    expect(fieldViolationsOf(zero).map((violation) => violation.field)).toEqual(['from_version']);
  });

  it('diffs two versions as their compact forms, with $$ references and never a sealed value', async () => {
    await push(harness, 'diffed', 1);
    await push(harness, 'diffed', 2);
    const { diff, linesAdded, linesRemoved, from, to } = await call(harness.store, 'diffWorkflowVersions', { name: 'diffed', fromVersion: 1, toVersion: 2 });
    expect([from?.version, to?.version, linesAdded, linesRemoved]).toEqual([1, 2, 1, 1]);
    expect(diff).toMatch(/^--- diffed_[0-9a-f-]+ version 1\n\+\+\+ diffed_[0-9a-f-]+ version 2\n/m);
    expect(diff).toMatch(/^-.*a\.n = 1/m);
    expect(diff).toMatch(/^\+.*a\.n = 2/m);
    expect(diff).not.toContain('###AES-');
    const whole = await call(harness.store, 'diffWorkflowVersions', { name: 'diffed', fromVersion: 1, toVersion: 2 });
    expect(whole.diff).not.toContain(PLAIN);
    expect((await call(harness.store, 'diffWorkflowVersions', { name: 'diffed', fromVersion: 2, toVersion: 2 })).diff).toBe('');
  });

  it('rolls back to a kept version as a new version, audited, and tells watchers as a push does', async () => {
    for (let n = 1; n <= 3; n++) await push(harness, 'rolled', n);
    const events: WatchWorkflowsResponse[] = [];
    const watch = harness.store.watchWorkflows({});
    watch.on('data', (event: WatchWorkflowsResponse) => events.push(event));
    watch.on('error', () => undefined);
    await expect.poll(() => events.some((event) => event.type === WorkflowEventType.WORKFLOW_EVENT_TYPE_SNAPSHOT_COMPLETE)).toBe(true);

    const { summary, metadata, unchanged } = await call(harness.store, 'rollbackWorkflow', { name: 'rolled', toVersion: 1 });
    expect([summary?.version, metadata?.version, unchanged]).toEqual([4, 4, false]);
    const { workflow } = await call(harness.store, 'getWorkflow', { name: 'rolled' });
    expect(queryOf(workflowFromProto(workflow!))).toContain('a.n = 1');
    // version 1 is pruned now (3 kept): version 4 is what it was
    const back = await call(harness.store, 'diffWorkflowVersions', { name: 'rolled', fromVersion: 3, toVersion: 4 });
    expect([back.diff.match(/^-.*a\.n = 3/m) !== null, back.diff.match(/^\+.*a\.n = 1/m) !== null, back.linesAdded, back.linesRemoved]).toEqual([
      true,
      true,
      1,
      1,
    ]);
    // the executor and the scheduler restart a running workflow on a PUT of a new version: after the snapshot's
    // version 3, the rollback sends one for version 4
    await expect
      .poll(() =>
        events
          .filter((event) => event.type === WorkflowEventType.WORKFLOW_EVENT_TYPE_PUT && event.summary?.name === summary?.name)
          .map((event) => event.metadata?.version),
      )
      .toEqual([3, 4]);
    watch.cancel();
    const pushed = (await auditedEvents(harness.audit, [AuditEventType.AUDIT_EVENT_TYPE_WORKFLOW_CONFIG_PUSHED])).filter(
      (event) => event.workflowName === summary?.name,
    );
    expect(pushed.map((event) => [event.attributes.version, event.attributes.rolledBackTo])).toEqual([
      ['1', undefined],
      ['2', undefined],
      ['3', undefined],
      ['4', '1'],
    ]);

    // to the version it already is: nothing written
    expect((await call(harness.store, 'rollbackWorkflow', { name: 'rolled', toVersion: 4 })).unchanged).toBe(true);
  });

  it('refuses a rollback to a pruned version and changes nothing', async () => {
    for (let n = 1; n <= 5; n++) await push(harness, 'refused', n);
    const refused = await failure(call(harness.store, 'rollbackWorkflow', { name: 'refused', toVersion: 2 }));
    expect(refused.code).toBe(status.NOT_FOUND);
    expect(refused.details).toMatch(/version 2 of workflow 'refused_[0-9a-f-]+' was pruned/);
    const { versions } = await call(harness.store, 'listWorkflowVersions', { name: 'refused' });
    expect(versions.map((version) => version.version)).toEqual([5, 4, 3]);
  });

  it('removes the kept versions with the workflow', async () => {
    const { summary } = await push(harness, 'deleted', 1);
    await push(harness, 'deleted', 2);
    expect(existsSync(join(dirs.workflows, '.history', summary!.name))).toBe(true);
    await call(harness.store, 'deleteWorkflow', { name: 'deleted' });
    expect(existsSync(join(dirs.workflows, '.history', summary!.name))).toBe(false);
  });

  it('keeps versions across a restart of the store', async () => {
    await push(harness, 'restarted', 1);
    await push(harness, 'restarted', 2);
    const again = await startStore(dirs, [`loom.datasource.history.keep=${KEEP}`], [(await import('../src/index.js')).configStoreModule]);
    try {
      const { versions } = await call(again.store, 'listWorkflowVersions', { name: 'restarted' });
      expect(versions.map((version) => version.version)).toEqual([2, 1]);
    } finally {
      await again.stop();
    }
  });
});

describe('applying a folder', () => {
  const dirs: Scratch = scratch();
  let harness: StoreHarness;
  const file = (name: string, n: number, sourceName = `${name}.workflow.yaml`) => ({ sourceName, text: compact(name, n) });
  const apply = (workflows: { sourceName: string; text: string }[], options: { apply?: boolean; prune?: boolean } = {}) =>
    call(harness.store, 'applyWorkflows', { workflows, schedules: [], prune: options.prune ?? false, apply: options.apply ?? false });

  beforeAll(async () => {
    harness = await startStore(dirs);
    await call(harness.secrets, 'createVariable', { key: 'NEO4J_PASSWORD', value: PLAIN, encrypted: true, userUuid: '' });
  });
  afterAll(async () => {
    await harness.stop();
    rmSync(dirs.root, { recursive: true, force: true });
  });

  it('plans, applies all or nothing, and then finds nothing to change', async () => {
    const folder = [file('alpha', 1), file('beta', 1)];
    const plan = await apply(folder);
    expect(plan.applied).toBe(false);
    // PlanWorkflows (the read permission's) answers the same plan
    const planned = await call(harness.store, 'planWorkflows', { workflows: folder, schedules: [], prune: false });
    const actions = (entries: typeof plan.entries) => entries.map((entry) => [entry.sourceName, entry.action, entry.diff, entry.version]);
    expect(actions(planned.entries)).toEqual(actions(plan.entries));
    expect(plan.entries.map((entry) => [entry.sourceName, entry.action])).toEqual([
      ['alpha.workflow.yaml', ApplyAction.APPLY_ACTION_ADDED],
      ['beta.workflow.yaml', ApplyAction.APPLY_ACTION_ADDED],
    ]);
    expect((await call(harness.store, 'listWorkflows', { pageSize: 0, pageToken: '' })).workflows).toEqual([]);

    const done = await apply(folder, { apply: true });
    expect(done.applied).toBe(true);
    expect(done.entries.map((entry) => entry.version)).toEqual([1, 1]);
    const again = await apply(folder, { apply: true });
    expect(again.applied).toBe(false);
    expect(again.entries.map((entry) => entry.action)).toEqual([ApplyAction.APPLY_ACTION_UNCHANGED, ApplyAction.APPLY_ACTION_UNCHANGED]);

    const changed = await apply([file('alpha', 2), file('beta', 1)]);
    expect(changed.entries.map((entry) => [entry.action, entry.linesAdded, entry.linesRemoved])).toEqual([
      [ApplyAction.APPLY_ACTION_CHANGED, 1, 1],
      [ApplyAction.APPLY_ACTION_UNCHANGED, 0, 0],
    ]);
    expect(changed.entries[0]?.diff).toMatch(/^\+.*a\.n = 2/m);

    // one invalid file among them: every error listed, nothing written
    const bad = `name: gamma\ncomponents:\n  In: source.Inlet\n  Out: sink.Loger\nlinks:\n  - In -> Nowhere\n`;
    const refused = await failure(apply([file('alpha', 3), { sourceName: 'gamma.workflow.yaml', text: bad }], { apply: true }));
    expect(refused.code).toBe(status.INVALID_ARGUMENT);
    const violations = fieldViolationsOf(refused);
    expect(violations.every((violation) => violation.field.startsWith('workflows[1]'))).toBe(true);
    expect(refused.details).toContain("unknown component type 'sink.Loger'");
    expect(refused.details).toContain('gamma.workflow.yaml');
    const { versions } = await call(harness.store, 'listWorkflowVersions', { name: 'alpha' });
    expect(versions.map((version) => version.version)).toEqual([1]);
  });

  it('refuses two files for one workflow, naming both', async () => {
    const refused = await failure(apply([file('delta', 1), file('delta', 2, 'delta-copy.workflow.yaml')], { apply: true }));
    expect(refused.code).toBe(status.INVALID_ARGUMENT);
    expect(fieldViolationsOf(refused)).toEqual([
      expect.objectContaining({
        field: 'workflows[1].name',
        description: expect.stringContaining('as delta.workflow.yaml (workflows[0]) does: one file per workflow') as unknown,
      }),
    ]);
  });

  it('refuses a file with a variable this environment lacks before writing any', async () => {
    const missing = { sourceName: 'epsilon.workflow.yaml', text: compact('epsilon', 1, '$$NOT_HERE') };
    const refused = await failure(apply([file('zeta', 1), missing], { apply: true }));
    expect(refused.code).toBe(status.INVALID_ARGUMENT);
    expect(refused.details).toContain('NOT_HERE');
    const names = (await call(harness.store, 'listWorkflows', { pageSize: 0, pageToken: '' })).workflows.map((workflow) => workflow.name);
    expect(names.some((name) => name.startsWith('zeta_') || name.startsWith('epsilon_'))).toBe(false);
  });

  it('with prune removes the workflows no file names', async () => {
    const plan = await apply([file('alpha', 1), file('beta', 1)], { prune: true });
    expect(plan.entries.filter((entry) => entry.action === ApplyAction.APPLY_ACTION_REMOVED)).toEqual([]);
    await apply([file('omega', 1)], { apply: true });
    const pruned = await apply([file('alpha', 1), file('beta', 1)], { prune: true, apply: true });
    expect(pruned.entries.map((entry) => [entry.name.split('_')[0], entry.action])).toEqual([
      ['alpha', ApplyAction.APPLY_ACTION_UNCHANGED],
      ['beta', ApplyAction.APPLY_ACTION_UNCHANGED],
      ['omega', ApplyAction.APPLY_ACTION_REMOVED],
    ]);
    const names = (await call(harness.store, 'listWorkflows', { pageSize: 0, pageToken: '' })).workflows.map((workflow) => workflow.name.split('_')[0]);
    expect(names).toEqual(['alpha', 'beta']);
  });

  it('finds a file that means the stored version unchanged whatever its text, also once remembered, until the workflow changes', async () => {
    await apply([file('theta', 1)], { apply: true });
    const commented = { sourceName: 'theta.workflow.yaml', text: `# reviewed\n${compact('theta', 1)}` };
    for (let round = 0; round < 2; round++)
      expect((await apply([commented])).entries.map((entry) => entry.action)).toEqual([ApplyAction.APPLY_ACTION_UNCHANGED]);
    await push(harness, 'theta', 2);
    expect((await apply([commented])).entries.map((entry) => entry.action)).toEqual([ApplyAction.APPLY_ACTION_CHANGED]);
  });
});
