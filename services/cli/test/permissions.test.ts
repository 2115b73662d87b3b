import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type InProcessLoom, runCli, startLoom } from './loom-in-process.js';

const viewerToken = 'viewer-token-for-the-cli-test-0001';
const adminToken = 'admin-token-for-the-cli-test-00001';
const example = fileURLToPath(new URL('../../../examples/article-pipeline.workflow.yaml', import.meta.url));

let loom: InProcessLoom;
beforeAll(async () => {
  loom = await startLoom([
    '--services',
    'audit,config-store,secrets',
    '--set',
    `loom.auth.tokens.dana=${viewerToken}`,
    '--set',
    'loom.auth.roles.dana=viewer',
    '--set',
    `loom.auth.tokens.ops-lead=${adminToken}`,
    '--set',
    'loom.auth.roles.ops-lead=admin',
    '--set',
    'loom.experimental.enabled=true',
    '--set',
    'loom.scripts.python.warmInterpreters=0',
  ]);
});
afterAll(async () => {
  await loom.stop();
});

describe('permissions through loom serve', () => {
  it('refuses a viewer the push with PERMISSION_DENIED, writes nothing, and audits the refusal', async () => {
    const refused = await runCli(['--address', loom.address, '--token', viewerToken, 'workflow', 'push', example]);
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toContain('PERMISSION_DENIED');
    const listed = await runCli(['--address', loom.address, '--token', viewerToken, 'workflow', 'list', '--output', 'json']);
    expect(listed.status).toBe(0);
    expect(listed.stdout).not.toContain('article');

    // a refusal's audit record is written after the refusal is answered (refusal-audit.ts): the tail is asked until it shows
    const tailed = () => runCli(['--address', loom.address, '--token', adminToken, 'audit', 'tail', '--type', 'PERMISSION_DENIED']);
    await expect.poll(async () => (await tailed()).stdout).toContain('/loom.v1.WorkflowStore/PutWorkflow');
    const tail = await tailed();
    expect(tail.stderr).toBe('');
    expect(tail.stdout).toContain('PERMISSION_DENIED');
    expect(tail.stdout).toContain('actor="dana"');
    expect(tail.stdout).toContain('/loom.v1.WorkflowStore/PutWorkflow');
  });

  it('lets the admin push what the viewer could not', async () => {
    const pushed = await runCli(['--address', loom.address, '--token', adminToken, 'workflow', 'push', example]);
    expect(pushed.stderr).toBe('');
    expect(pushed.status).toBe(0);
  });

  it("tells an executor of its own whose call the config store refuses by the executor's identity and the setting, not as the operator's token", async () => {
    // the several-executors setup without loom.auth.tokens.executor: each process has a random token of its own for it
    const addresses = ['config-store', 'secrets', 'audit', 'skill-gateway'].flatMap((service) => ['--set', `loom.services.${service}.address=${loom.address}`]);
    const executor = await startLoom([
      '--services',
      'executor',
      ...addresses,
      '--set',
      `loom.auth.tokens.ops-lead=${adminToken}`,
      '--set',
      'loom.auth.roles.ops-lead=admin',
    ]);
    try {
      await runCli(['--address', loom.address, '--token', adminToken, 'workflow', 'push', example]);
      const started = await runCli(['--address', executor.address, '--token', adminToken, 'workflow', 'start', 'Article pipeline']);
      expect(started.status).not.toBe(0);
      expect(started.stderr).toContain(
        "FAILED_PRECONDITION: the executor's call to the config store was refused (UNAUTHENTICATED: invalid bearer token): " +
          "set loom.auth.tokens.executor to the same token in the executor's process and in the config store's",
      );
    } finally {
      await executor.stop();
    }
  });
});
