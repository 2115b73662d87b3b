import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { AuditEventType, WorkflowStoreClient } from '@loom/contracts';
import { scheduleToProto, workflowToProto } from '@loom/domain/proto';
import { call, createClient, type RunningServices } from '@loom/service-kit';
import { serveForTest } from '@loom/service-kit/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { configStoreModule } from '../src/index.js';
import {
  auditedEvents,
  auditModule,
  failure,
  graphWorkflow,
  type Scratch,
  scratch,
  secretsModule,
  startStore,
  status,
  storedFiles,
  type StoreHarness,
} from './harness.js';

const PLAIN = 'audited-push-password-8b3f';
const NAME = 'Audited import_5a1c9e2d-3b4f-4c6d-8e7f-9a0b1c2d3e4f';
const OTHER = 'Never stored_6b2d0f3e-4c5a-4d7e-9f80-a1b2c3d4e5f6';
const devToken = 'dev-token-0123456789abcdef012345';
const storeToken = 'config-store-token-for-audit-0123';
const TYPES = [
  AuditEventType.AUDIT_EVENT_TYPE_WORKFLOW_CONFIG_PUSHED,
  AuditEventType.AUDIT_EVENT_TYPE_SCHEDULE_CHANGED,
  AuditEventType.AUDIT_EVENT_TYPE_WORKFLOW_DELETED,
];
const schedule = { enabled: true, cron: '0 */5 * * * *', timezone: 'Europe/Berlin', overlap: 'SKIP', catchUp: 'NONE' } as const;

function filesOf(directory: string): Record<string, string> {
  return Object.fromEntries(storedFiles(directory).map((file) => [file, readFileSync(join(directory, file), 'utf8')]));
}

describe('config store: every privileged change audited, fail closed', () => {
  let dirs: Scratch;
  let audit: RunningServices;
  let harness: StoreHarness;
  let dev: WorkflowStoreClient;

  // services of its own for each test: one takes the audit service away, and each reads the audit log as its own
  beforeEach(async () => {
    dirs = scratch();
    // the audit service runs in a process of its own, so that the test can take it away
    audit = await serveForTest([auditModule], [`loom.security.audit.log.path=${dirs.auditLog}`, `loom.auth.tokens.config-store=${storeToken}`]);
    harness = await startStore(
      dirs,
      [
        `loom.services.audit.address=127.0.0.1:${audit.port}`,
        `loom.auth.tokens.config-store=${storeToken}`,
        `loom.auth.tokens.dev=${devToken}`,
        'loom.auth.roles.dev=editor',
      ],
      [secretsModule, configStoreModule],
    );
    dev = createClient(WorkflowStoreClient, harness.address, { retry: false, token: devToken });
  });
  afterEach(async () => {
    dev.close();
    await harness.stop();
    await audit.stop();
    rmSync(dirs.root, { recursive: true, force: true });
  });

  it('appends WORKFLOW_CONFIG_PUSHED, SCHEDULE_CHANGED and WORKFLOW_DELETED with the actor, the version and the sha256, never a value', async () => {
    const first = await call(dev, 'putWorkflow', { workflow: workflowToProto(graphWorkflow(NAME, PLAIN)), expectedVersion: undefined });
    const second = await call(dev, 'putWorkflow', { workflow: workflowToProto(graphWorkflow(NAME, PLAIN)), expectedVersion: 1 });
    await call(dev, 'putSchedule', { workflowName: NAME, schedule: scheduleToProto(schedule) });
    const beforeDelete = await call(dev, 'getWorkflow', { name: NAME });
    await call(dev, 'deleteWorkflow', { name: NAME, expectedVersion: undefined });

    const events = await auditedEvents(harness.audit, TYPES);
    expect(events.map((event) => ({ type: event.type, workflow: event.workflowName, actor: event.actor, attributes: event.attributes }))).toEqual([
      { type: TYPES[0], workflow: NAME, actor: 'dev', attributes: { version: '1', sha256: first.metadata?.sha256 } },
      { type: TYPES[0], workflow: NAME, actor: 'dev', attributes: { version: '2', sha256: second.metadata?.sha256 } },
      {
        type: TYPES[1],
        workflow: NAME,
        actor: 'dev',
        attributes: {
          version: '2',
          sha256: second.metadata?.sha256,
          change: 'stored',
          enabled: 'true',
          cron: schedule.cron,
          timezone: schedule.timezone,
          overlap: 'SKIP',
          catchUp: 'NONE',
        },
      },
      { type: TYPES[2], workflow: NAME, actor: 'dev', attributes: { version: '2', sha256: beforeDelete.metadata?.sha256 } },
    ]);
    expect(first.metadata?.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(readFileSync(dirs.auditLog, 'utf8')).not.toContain(PLAIN);
  });

  it('with the audit log down, refuses a push, a schedule and a delete with UNAVAILABLE and leaves every file as it was', async () => {
    await call(dev, 'putWorkflow', { workflow: workflowToProto(graphWorkflow(NAME, PLAIN)), expectedVersion: undefined });
    await call(dev, 'putSchedule', { workflowName: NAME, schedule: scheduleToProto(schedule) });
    const before = filesOf(dirs.workflows);
    await audit.stop();

    const refusals = [
      await failure(call(dev, 'putWorkflow', { workflow: workflowToProto(graphWorkflow(OTHER, PLAIN)), expectedVersion: undefined })),
      await failure(call(dev, 'putWorkflow', { workflow: workflowToProto(graphWorkflow(NAME, 'a-new-password')), expectedVersion: undefined })),
      await failure(call(dev, 'putSchedule', { workflowName: NAME, schedule: scheduleToProto({ ...schedule, enabled: false }) })),
      await failure(call(dev, 'deleteWorkflow', { name: NAME, expectedVersion: undefined })),
    ];
    expect(refusals.map((refusal) => refusal.code)).toEqual([status.UNAVAILABLE, status.UNAVAILABLE, status.UNAVAILABLE, status.UNAVAILABLE]);
    expect(refusals[0]?.details).toMatch(/the audit event WORKFLOW_CONFIG_PUSHED could not be written/);

    expect(filesOf(dirs.workflows)).toEqual(before);
    const { workflows } = await call(dev, 'listWorkflows', { pageSize: 0, pageToken: '' });
    expect(workflows.map((workflow) => [workflow.name, workflow.version])).toEqual([[NAME, 1]]);
    expect((await call(dev, 'getSchedule', { workflowName: NAME })).schedule?.enabled).toBe(true);
  });
});
