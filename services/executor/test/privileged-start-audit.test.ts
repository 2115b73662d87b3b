import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { workflowToProto } from '@loom/domain/proto';
import { call, type RunningServices } from '@loom/service-kit';
import { failure, serveForTest } from '@loom/service-kit/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditModule, type ExecutorHarness, executorToken, pipelineWorkflow, startExecutor } from './harness.js';

const storeToken = 'config-store-token-privileged-0123';

describe('a privileged start with the audit log down', () => {
  let audit: RunningServices;
  let harness: ExecutorHarness;

  beforeAll(async () => {
    // the audit service in a process of its own, so that the test can take it away after the push
    const log = join(mkdtempSync(join(tmpdir(), 'loom-privileged-audit-')), 'audit.log');
    audit = await serveForTest(
      [auditModule],
      [`loom.security.audit.log.path=${log}`, `loom.auth.tokens.config-store=${storeToken}`, `loom.auth.tokens.executor=${executorToken}`],
    );
    harness = await startExecutor([`loom.services.audit.address=127.0.0.1:${audit.port}`, `loom.auth.tokens.config-store=${storeToken}`]);
  });
  afterAll(async () => {
    await harness.stop();
    await audit.stop();
  });

  it('is refused with UNAVAILABLE, and no script runs', async () => {
    const { summary } = await call(harness.store, 'putWorkflow', { workflow: workflowToProto(pipelineWorkflow()), expectedVersion: undefined });
    await audit.stop();
    const refused = await failure(call(harness.executor, 'startWorkflow', { name: summary?.name ?? '' }));
    expect(refused.code).toBe(status.UNAVAILABLE);
    expect(refused.details).toContain('WORKFLOW_PRIVILEGED_ACTION_EVENT could not be written');
    expect((await failure(call(harness.executor, 'getWorkflowStatus', { name: summary?.name ?? '' }))).code).toBe(status.NOT_FOUND);
  });
});
