import { AuditClient, AuditEventType } from '@loom/contracts';
import { appendRequired, createClient } from '@loom/service-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type InProcessLoom, runCli, startLoom } from './loom-in-process.js';

const executorToken = 'executor-token-for-the-cli-test-01';
let loom: InProcessLoom;
beforeAll(async () => {
  loom = await startLoom(['--services', 'audit', '--set', 'loom.auth.allowAnonymous=true', '--set', `loom.auth.tokens.executor=${executorToken}`]);
  const audit = createClient(AuditClient, loom.address, { token: executorToken });
  try {
    await appendRequired(audit, { type: AuditEventType.AUDIT_EVENT_TYPE_WORKFLOW_START, workflowName: 'Nightly load' });
    await appendRequired(audit, {
      type: AuditEventType.AUDIT_EVENT_TYPE_WORKFLOW_PRIVILEGED_ACTION_EVENT,
      workflowName: 'Nightly load',
      reason: 'a workflow with the script engine started',
    });
  } finally {
    audit.close();
  }
});
afterAll(async () => {
  await loom.stop();
});

describe('loom audit', () => {
  it('tails the log with a type filter', async () => {
    const tail = await runCli(['--address', loom.address, 'audit', 'tail', '--type', 'WORKFLOW_PRIVILEGED_ACTION_EVENT']);
    expect(tail.stderr).toBe('');
    expect(tail.stdout).toMatch(
      /^2 {2}\S+Z {2}WORKFLOW_PRIVILEGED_ACTION_EVENT {2}workflow="Nightly load" reason="a workflow with the script engine started" actor="executor"\n$/,
    );
  });

  it('verifies the chain', async () => {
    const verify = await runCli(['--address', loom.address, 'audit', 'verify']);
    expect(verify.status).toBe(0);
    expect(verify.stdout).toBe('audit log intact: 2 events checked\n');
  });
});
