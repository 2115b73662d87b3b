import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { AuditEventType, WorkflowEventType, type WatchWorkflowsResponse } from '@loom/contracts';
import { COMPONENT_KINDS, findComponentDefinition, parseWorkflowJson, serializeWorkflowJson, type WorkflowConfiguration } from '@loom/domain';
import { workflowFromProto, workflowToProto, scheduleToProto } from '@loom/domain/proto';
import { call, fieldViolationsOf } from '@loom/service-kit';
import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { configStoreModule } from '../src/index.js';
import { auditedEvents, failure, graphWorkflow, type Scratch, scratch, startStore, status, type StoreHarness } from './harness.js';

const PLAIN = 'graph-password-5e1d7c3a-never-on-disk';

function push(harness: StoreHarness, workflow: WorkflowConfiguration, expectedVersion?: number) {
  return call(harness.store, 'putWorkflow', { workflow: workflowToProto(workflow), expectedVersion });
}

function pushCompact(harness: StoreHarness, compact: string, sourceName?: string) {
  return call(harness.store, 'putWorkflow', { compact, sourceName });
}

function filesIn(directory: string): string[] {
  return readdirSync(directory).sort();
}

describe('config store with the secrets service', () => {
  // one store for the file, holding the variable NEO4J_PASSWORD; each test pushes a workflow of its own name, so no
  // test depends on another's files
  const dirs: Scratch = scratch();
  let harness: StoreHarness;
  let NAME: string;

  beforeAll(async () => {
    harness = await startStore(dirs);
    await call(harness.secrets, 'createVariable', { key: 'NEO4J_PASSWORD', value: PLAIN, encrypted: true, userUuid: '' });
  });
  afterAll(async () => {
    await harness.stop();
    rmSync(dirs.root, { recursive: true, force: true });
  });
  beforeEach(() => {
    NAME = `Article import_${randomUUID()}`;
  });

  it('runs the verification scenario: the stored file holds the password only sealed', async () => {
    const { variable } = await call(harness.secrets, 'getVariable', { key: 'NEO4J_PASSWORD' });
    expect(variable?.encrypted).toBe(true);

    const { address, database } = await call(harness.secrets, 'describeStorage', {});
    const client = new pg.Client({ connectionString: `postgresql://postgres@${address}/${database}` });
    await client.connect();
    const { rows } = await client.query<{ encrypted: boolean; value: string }>('SELECT encrypted, value FROM public.ecosystem_variable WHERE key = $1', [
      'NEO4J_PASSWORD',
    ]);
    await client.end();
    expect(rows).toHaveLength(1);
    expect(rows[0]?.encrypted).toBe(true);
    expect(rows[0]?.value).not.toContain(PLAIN);

    const { summary, metadata } = await push(harness, graphWorkflow(NAME, '$$NEO4J_PASSWORD'));
    expect(summary).toMatchObject({ name: NAME, uuid: NAME.slice(-36), version: 1, valid: true });
    expect(metadata?.version).toBe(1);

    const text = readFileSync(join(dirs.workflows, `${NAME}.workflow.json`), 'utf8');
    expect(text).not.toContain(PLAIN);
    expect(text).not.toContain('$$NEO4J_PASSWORD');
    expect(text).toContain('###AES-');
    const companion = JSON.parse(readFileSync(join(dirs.workflows, `${NAME}.json`), 'utf8')) as Record<string, unknown>;
    expect(companion).toMatchObject({ version: 1, pushedBy: '' });
    expect(companion.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(harness.logLines.join('\n')).not.toContain(PLAIN);
  });

  it('gives the stored workflow back sealed, counts versions and refuses a stale expected version', async () => {
    await push(harness, graphWorkflow(NAME, '$$NEO4J_PASSWORD'));
    const { workflow, metadata } = await call(harness.store, 'getWorkflow', { name: NAME });
    expect(JSON.stringify(workflow)).not.toContain(PLAIN);
    expect(metadata?.version).toBe(1);

    const changed = graphWorkflow(NAME, '$$NEO4J_PASSWORD');
    const second = await push(harness, { ...changed, autoStart: !changed.autoStart }, 1);
    expect(second.summary?.version).toBe(2);
    const stale = await failure(push(harness, graphWorkflow(NAME, '$$NEO4J_PASSWORD'), 1));
    expect(stale.code).toBe(status.ABORTED);
    expect(stale.details).toMatch(/is at version 2, not the expected 1/);
    const exists = await failure(push(harness, graphWorkflow(NAME, '$$NEO4J_PASSWORD'), 0));
    expect(exists.code).toBe(status.ABORTED);
  });

  it('names a workflow pushed under its bare name with a new uuid, and finds it again by that name', async () => {
    const first = await push(harness, graphWorkflow('Nightly load', PLAIN));
    expect(first.summary?.name).toMatch(/^Nightly load_[0-9a-f-]{36}$/);
    const again = await push(harness, graphWorkflow('Nightly load', PLAIN));
    expect(again.summary).toMatchObject({ name: first.summary?.name, version: 2 });
    const { workflow } = await call(harness.store, 'getWorkflow', { name: 'Nightly load' });
    expect(workflow?.name).toBe(first.summary?.name);
    // a plain PASSWORD value is sealed as well
    const text = readFileSync(join(dirs.workflows, `${first.summary?.name}.workflow.json`), 'utf8');
    expect(text).not.toContain(PLAIN);
    expect(text).toContain('###AES-');
  });

  it('round-trips a name with spaces and refuses names that could leave the directory', async () => {
    const spaced = 'My  spaced workflow name_6a1c2b3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d';
    await push(harness, graphWorkflow(spaced, '$$NEO4J_PASSWORD'));
    expect(filesIn(dirs.workflows)).toContain(`${spaced}.workflow.json`);
    expect((await call(harness.store, 'getWorkflow', { name: spaced })).workflow?.name).toBe(spaced);

    const before = filesIn(dirs.workflows);
    for (const name of ['../escape', 'a/b', 'a\\b', 'nul\u0000byte', '..', '.hidden', '']) {
      const refused = await failure(push(harness, graphWorkflow(name, '$$NEO4J_PASSWORD')));
      expect(refused.code, JSON.stringify(name)).toBe(status.INVALID_ARGUMENT);
      expect(fieldViolationsOf(refused)[0]).toMatchObject({ field: 'name', reason: 'INVALID_NAME' });
    }
    expect(filesIn(dirs.workflows)).toEqual(before);
    expect((await failure(call(harness.store, 'getWorkflow', { name: '../../etc/passwd' }))).code).toBe(status.INVALID_ARGUMENT);
  });

  it('writes nothing for an invalid workflow, an unknown variable or a configuration over 4 MiB', async () => {
    await push(harness, graphWorkflow(NAME, '$$NEO4J_PASSWORD'));
    const before = filesIn(dirs.workflows);
    const unknownVariable = await failure(push(harness, graphWorkflow('Unknown variable', '$$NO_SUCH_VARIABLE')));
    expect(unknownVariable.code).toBe(status.INVALID_ARGUMENT);
    expect(fieldViolationsOf(unknownVariable)[0]?.description).toContain("unknown variable 'NO_SUCH_VARIABLE'");

    const badLink = graphWorkflow('Bad link', '$$NEO4J_PASSWORD');
    badLink.links = [...badLink.links, { from: badLink.components[0]?.name ?? '', to: 'Nowhere_00000000-0000-4000-8000-000000000000' }];
    const linkError = await failure(push(harness, badLink));
    expect(linkError.code).toBe(status.INVALID_ARGUMENT);
    expect(fieldViolationsOf(linkError)).toContainEqual(expect.objectContaining({ field: `links[${badLink.links.length - 1}].to` }));

    const huge = graphWorkflow('Huge', '$$NEO4J_PASSWORD');
    const writer = huge.components.find((component) => component.options.some((option) => option.name === 'query'));
    const query = writer?.options.find((option) => option.name === 'query');
    if (query === undefined) throw new Error('the fixture has no query option');
    query.value = `RETURN '${'x'.repeat(4 * 1024 * 1024)}'`;
    const tooLarge = await failure(push(harness, huge));
    expect(tooLarge.code).toBe(status.INVALID_ARGUMENT);
    expect(fieldViolationsOf(tooLarge)[0]).toMatchObject({ reason: 'TOO_LARGE' });

    expect(filesIn(dirs.workflows)).toEqual(before);
  });

  it('stores a schedule beside the workflow and refuses a bad cron or time zone', async () => {
    await push(harness, graphWorkflow(NAME, '$$NEO4J_PASSWORD'));
    const schedule = { enabled: true, cron: '0 */5 * * * *', timezone: 'Europe/Berlin', overlap: 'SKIP', catchUp: 'LATEST' } as const;
    await call(harness.store, 'putSchedule', { workflowName: NAME, schedule: scheduleToProto(schedule) });
    expect(JSON.parse(readFileSync(join(dirs.workflows, `${NAME}.scheduler.json`), 'utf8'))).toEqual(schedule);
    expect((await call(harness.store, 'getSchedule', { workflowName: NAME })).schedule).toEqual(scheduleToProto(schedule));

    const bad = await failure(
      call(harness.store, 'putSchedule', { workflowName: NAME, schedule: scheduleToProto({ ...schedule, cron: '*/5 * * * *', timezone: 'Mars/Olympus' }) }),
    );
    expect(bad.code).toBe(status.INVALID_ARGUMENT);
    expect(fieldViolationsOf(bad).map((violation) => violation.field)).toEqual(['schedule.cron', 'schedule.timezone']);
    const nothing = await failure(call(harness.store, 'putSchedule', { workflowName: 'No such workflow', schedule: scheduleToProto(schedule) }));
    expect(nothing.code).toBe(status.NOT_FOUND);
  });

  it('streams the current state, then every put and delete', async () => {
    await push(harness, graphWorkflow(NAME, '$$NEO4J_PASSWORD'));
    const stream = harness.store.watchWorkflows({});
    const events: WatchWorkflowsResponse[] = [];
    const seen = (predicate: (event: WatchWorkflowsResponse) => boolean): Promise<void> =>
      new Promise((resolve) => {
        const check = (): void => {
          if (events.some(predicate)) resolve();
          else setTimeout(check, 10);
        };
        check();
      });
    stream.on('data', (event: WatchWorkflowsResponse) => events.push(event));
    stream.on('error', () => undefined);
    await seen((event) => event.type === WorkflowEventType.WORKFLOW_EVENT_TYPE_SNAPSHOT_COMPLETE);
    const snapshot = events.filter((event) => event.type === WorkflowEventType.WORKFLOW_EVENT_TYPE_PUT).map((event) => event.summary?.name);
    expect(snapshot).toContain(NAME);
    expect(workflowFromProto(events.find((event) => event.summary?.name === NAME)?.workflow ?? workflowToProto(graphWorkflow('x', 'x'))).name).toBe(NAME);

    const live = 'Watched_1b2c3d4e-5f60-4a7b-8c9d-0e1f2a3b4c5d';
    await push(harness, graphWorkflow(live, '$$NEO4J_PASSWORD'));
    // identical (its password an encrypted variable, sealed the same each time): no new version, so no event
    expect(await push(harness, graphWorkflow(live, '$$NEO4J_PASSWORD'))).toMatchObject({ unchanged: true, summary: { version: 1 } });
    await call(harness.store, 'deleteWorkflow', { name: live });
    await seen((event) => event.type === WorkflowEventType.WORKFLOW_EVENT_TYPE_DELETE && event.summary?.name === live);
    const after = events.slice(events.findIndex((event) => event.type === WorkflowEventType.WORKFLOW_EVENT_TYPE_SNAPSHOT_COMPLETE) + 1);
    expect(after.map((event) => [event.type, event.summary?.name])).toEqual([
      [WorkflowEventType.WORKFLOW_EVENT_TYPE_PUT, live],
      [WorkflowEventType.WORKFLOW_EVENT_TYPE_DELETE, live],
    ]);
    stream.cancel();
    expect(filesIn(dirs.workflows).filter((file) => file.startsWith('Watched'))).toEqual([]);
  });

  it('stores a compact push in the full form with the catalog definitions, and answers an identical push unchanged', async () => {
    const name = `Compact etl_${randomUUID()}`;
    const text = `name: ${name}\ncomponents:\n  In: source.Inlet\n  Log: {kind: sink.Logger, options: {level: debug}}\nlinks:\n  - In -> Log\n`;
    const first = await pushCompact(harness, text, 'etl.workflow.yaml');
    expect(first).toMatchObject({ unchanged: false, summary: { name, version: 1, valid: true } });
    const stored = await call(harness.store, 'getWorkflow', { name });
    const full = workflowFromProto(stored.workflow ?? workflowToProto(graphWorkflow('x', 'x')));
    expect(full.components.map((instance) => instance.component)).toEqual([
      findComponentDefinition(COMPONENT_KINDS.INLET),
      findComponentDefinition(COMPONENT_KINDS.LOGGER),
    ]);

    // the same text, the same workflow as JSON, and the stored full form back: nothing written, no audit event
    const again = await pushCompact(harness, text);
    expect(again).toMatchObject({ unchanged: true, summary: { version: 1 }, metadata: { updatedAt: first.metadata?.updatedAt } });
    const asJson = JSON.stringify({
      name,
      components: { In: 'source.Inlet', Log: { kind: 'sink.Logger', options: { level: 'debug' } } },
      links: ['In -> Log'],
    });
    expect((await pushCompact(harness, asJson)).unchanged).toBe(true);
    expect((await push(harness, full)).unchanged).toBe(true);
    const pushes = await auditedEvents(harness.audit, [AuditEventType.AUDIT_EVENT_TYPE_WORKFLOW_CONFIG_PUSHED]);
    expect(pushes.filter((event) => event.workflowName === name)).toHaveLength(1);

    const changed = await pushCompact(harness, text.replace('level: debug', 'level: info'));
    expect(changed).toMatchObject({ unchanged: false, summary: { version: 2 } });
  });

  it('refuses a compact push listing every violation with its line and the source name, in the text and the details', async () => {
    const text =
      'name: Broken\ncomponents:\n  In: source.Inlte\n  Log: sink.Loger\n  Parse: {kind: processor.HttpEnricher, options: {url: http://example.org, max_retry: three}}\nlinks: [In -> Parse -> Log]\n';
    const refused = await failure(pushCompact(harness, text, 'broken.workflow.yaml'));
    expect(refused.code).toBe(status.INVALID_ARGUMENT);
    const expected = [
      "components.In.kind: unknown component type 'source.Inlte': did you mean source.Inlet? (line 3 of broken.workflow.yaml)",
      "components.Log.kind: unknown component type 'sink.Loger': did you mean sink.Logger? (line 4 of broken.workflow.yaml)",
    ];
    expect(fieldViolationsOf(refused).map((violation) => `${violation.field}: ${violation.description}`)).toEqual(expected);
    expect(refused.details).toBe(expected.join('; '));

    // the kinds right, the option's type wrong: the catalog's checks, named by the compact file's field
    const typed = await failure(pushCompact(harness, text.replace('source.Inlte', 'source.Inlet').replace('sink.Loger', 'sink.Logger')));
    expect(fieldViolationsOf(typed)).toEqual([expect.objectContaining({ field: 'components.Parse.options.max_retry', reason: 'WRONG_TYPE' })]);
    expect(typed.details).toMatch(/^components\.Parse\.options\.max_retry: .*INTEGER.* \(line 5\)$/);

    const both = await failure(call(harness.store, 'putWorkflow', { workflow: workflowToProto(graphWorkflow(NAME, '$$NEO4J_PASSWORD')), compact: text }));
    expect(fieldViolationsOf(both)).toEqual([expect.objectContaining({ field: 'compact', reason: 'CONFLICTING_FIELDS' })]);
    const neither = await failure(call(harness.store, 'putWorkflow', {}));
    expect(fieldViolationsOf(neither)).toEqual([expect.objectContaining({ field: 'workflow', reason: 'MISSING_FIELD' })]);
    const badSource = await failure(pushCompact(harness, text, 'evil\nname'));
    expect(fieldViolationsOf(badSource)).toEqual([expect.objectContaining({ field: 'source_name', reason: 'INVALID_VALUE' })]);
    expect(filesIn(dirs.workflows).filter((file) => file.startsWith('Broken'))).toEqual([]);
  });

  it('fills a hollow full-form definition from the catalog, and refuses one that contradicts it', async () => {
    const hollow = graphWorkflow(NAME, '$$NEO4J_PASSWORD');
    for (const instance of hollow.components) instance.component = { ...instance.component, name: '', inputType: '', outputType: '', options: [] };
    await push(harness, hollow);
    const stored = readFileSync(join(dirs.workflows, `${NAME}.workflow.json`), 'utf8');
    const definitions = parseWorkflowJson(stored).components.map((instance) => instance.component);
    expect(definitions).toEqual(hollow.components.map((instance) => findComponentDefinition(instance.component.qualifiedName)));

    const contradicting = graphWorkflow(`Contradicting_${randomUUID()}`, '$$NEO4J_PASSWORD');
    const [first] = contradicting.components;
    if (first === undefined) throw new Error('the fixture has components');
    first.component = { ...first.component, type: first.component.type === 'SINK' ? 'SOURCE' : 'SINK' };
    const refused = await failure(push(harness, contradicting));
    expect(fieldViolationsOf(refused)).toContainEqual(expect.objectContaining({ field: 'components[0].component.type', reason: 'DEFINITION_MISMATCH' }));
    expect(filesIn(dirs.workflows).filter((file) => file.startsWith('Contradicting'))).toEqual([]);
  });

  it('answers UNAVAILABLE and writes nothing while the secrets service is down', async () => {
    const alone = scratch();
    const store = await startStore(alone, ['loom.services.secrets.address=127.0.0.1:1'], [configStoreModule]);
    try {
      const down = await failure(push(store, graphWorkflow('Lonely', '$$NEO4J_PASSWORD')));
      expect(down.code).toBe(status.UNAVAILABLE);
      await mkdir(alone.workflows, { recursive: true });
      expect(filesIn(alone.workflows)).toEqual([]);
    } finally {
      await store.stop();
    }
  });
});

describe('config store start-up', () => {
  it('loads the valid workflows, lists a corrupt one as invalid and leaves it untouched', async () => {
    const dirs = scratch();
    await mkdir(dirs.workflows, { recursive: true });
    const good = graphWorkflow('Good_11111111-2222-4333-8444-555555555555', '###AES-not-opened-here');
    writeFileSync(join(dirs.workflows, `${good.name}.workflow.json`), serializeWorkflowJson(good));
    const corrupt = '{ "name": "Broken_99999999-8888-4777-8666-555555555555", "autoStart": tru';
    const corruptPath = join(dirs.workflows, 'Broken_99999999-8888-4777-8666-555555555555.workflow.json');
    writeFileSync(corruptPath, corrupt);
    writeFileSync(join(dirs.workflows, '.Good.json.0123456789ab.tmp'), '{"half":');

    const harness = await startStore(dirs);
    try {
      const { workflows } = await call(harness.store, 'listWorkflows', { pageSize: 0, pageToken: '' });
      expect(workflows.map((workflow) => [workflow.name, workflow.valid, workflow.version])).toEqual([
        ['Broken_99999999-8888-4777-8666-555555555555', false, 1],
        [good.name, true, 1],
      ]);
      expect(workflows[0]?.invalidReason).toMatch(/line 1/);
      const get = await failure(call(harness.store, 'getWorkflow', { name: 'Broken' }));
      expect(get.code).toBe(status.FAILED_PRECONDITION);
      expect(readFileSync(corruptPath, 'utf8')).toBe(corrupt);
      expect(filesIn(dirs.workflows)).toEqual([corruptPath.slice(dirs.workflows.length + 1), `${good.name}.workflow.json`].sort());
      expect(harness.logLines.some((line) => line.includes('stored workflow is invalid'))).toBe(true);
    } finally {
      await harness.stop();
    }
  });
});
