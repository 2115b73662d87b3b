import { randomUUID } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { AuditEventType, SecretsClient } from '@loom/contracts';
import { call, createClient, type RunningServices } from '@loom/service-kit';
import { serveForTest } from '@loom/service-kit/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  auditedEvents,
  auditModule,
  embeddedBackend,
  executorToken,
  failure,
  graphWorkflow,
  type SecretsHarness,
  openVia,
  sealVia,
  startSecrets,
  status,
} from './harness.js';

const PLAIN = 'audit-test-secret-value-5c2e';
const OTHER = 'audit-test-other-value-9d41';
const opsToken = 'ops-token-0123456789abcdef0123';
const secretsToken = 'secrets-token-0123456789abcdef01';
const userUuid = '6f1c2b4e-8d3a-4f5e-9a7b-0c1d2e3f4a5b';
const { VARIABLE_CREATED, VARIABLE_UPDATED, VARIABLE_DELETED, KEY_ROTATED, DECRYPT_DENIED } = {
  VARIABLE_CREATED: AuditEventType.AUDIT_EVENT_TYPE_VARIABLE_CREATED,
  VARIABLE_UPDATED: AuditEventType.AUDIT_EVENT_TYPE_VARIABLE_UPDATED,
  VARIABLE_DELETED: AuditEventType.AUDIT_EVENT_TYPE_VARIABLE_DELETED,
  KEY_ROTATED: AuditEventType.AUDIT_EVENT_TYPE_KEY_ROTATED,
  DECRYPT_DENIED: AuditEventType.AUDIT_EVENT_TYPE_DECRYPT_DENIED,
};

/** The audit service in a process of its own, which the test stops to take the audit log away. */
async function startAuditAlone(logPath: string): Promise<RunningServices> {
  return serveForTest([auditModule], [`loom.security.audit.log.path=${logPath}`, `loom.auth.tokens.secrets=${secretsToken}`]);
}

describe('secrets service: every privileged change audited, fail closed', () => {
  let audit: RunningServices;
  let secrets: SecretsHarness;
  let ops: SecretsClient;
  let auditLog: string;

  // a fresh audit service and secrets service for each test: one test stops the audit service, and each reads the log
  // as its own
  beforeEach(async () => {
    auditLog = `${process.env.TMPDIR ?? '/tmp'}/loom-secrets-audit-${process.pid}-${randomUUID()}.log`;
    audit = await startAuditAlone(auditLog);
    secrets = await startSecrets(embeddedBackend(), {
      withoutAudit: true,
      extraOverrides: [
        `loom.services.audit.address=127.0.0.1:${audit.port}`,
        `loom.auth.tokens.secrets=${secretsToken}`,
        `loom.auth.tokens.ops=${opsToken}`,
        'loom.auth.roles.ops=admin',
      ],
    });
    ops = createClient(SecretsClient, `127.0.0.1:${secrets.running.port}`, { retry: false, token: opsToken });
  });
  afterEach(async () => {
    ops.close();
    await secrets.stop();
    await audit.stop();
    rmSync(auditLog, { force: true });
  });

  it('appends VARIABLE_CREATED, _UPDATED, _DELETED and KEY_ROTATED with the acting identity, never the value', async () => {
    const { variable } = await call(ops, 'createVariable', { key: 'API_TOKEN', value: PLAIN, encrypted: true, userUuid });
    await call(ops, 'updateVariable', { key: 'API_TOKEN', value: OTHER, userUuid });
    const rotated = await call(ops, 'rotateKey', { keyId: '' });
    await call(ops, 'deleteVariable', { key: 'API_TOKEN' });

    const events = await auditedEvents(secrets.audit, [VARIABLE_CREATED, VARIABLE_UPDATED, VARIABLE_DELETED, KEY_ROTATED]);
    expect(events.map((event) => [event.type, event.actor])).toEqual([
      [VARIABLE_CREATED, 'ops'],
      [VARIABLE_UPDATED, 'ops'],
      [KEY_ROTATED, 'ops'],
      [VARIABLE_DELETED, 'ops'],
    ]);
    expect(events[0]?.attributes).toEqual({ key: 'API_TOKEN', uuid: variable?.uuid, encrypted: 'true', userUuid });
    expect(events[2]?.attributes.activeKeyId).toBe(rotated.activeKeyId);
    expect(events[2]?.attributes.previousKeyId).not.toBe(rotated.activeKeyId);
    const log = readFileSync(auditLog, 'utf8');
    expect(log).not.toContain(PLAIN);
    expect(log).not.toContain(OTHER);
  });

  it('appends DECRYPT_DENIED when an identity other than the executor asks for plain values', async () => {
    await call(ops, 'createVariable', { key: 'DB_PASSWORD', value: PLAIN, encrypted: true, userUuid });
    const { workflow: sealed } = await sealVia(secrets.configStore, graphWorkflow('$$DB_PASSWORD'));
    expect((await failure(openVia(ops, sealed))).code).toBe(status.PERMISSION_DENIED);
    // the refusal's record is written beside the refusal, not before it
    await expect
      .poll(async () => (await auditedEvents(secrets.audit, [DECRYPT_DENIED])).map((event) => [event.actor, event.attributes.rpc]))
      .toEqual([['ops', '/loom.v1.Secrets/DecryptResources']]);
    const executor = createClient(SecretsClient, `127.0.0.1:${secrets.running.port}`, { retry: false, token: executorToken });
    try {
      await openVia(executor, sealed);
    } finally {
      executor.close();
    }
    expect(await auditedEvents(secrets.audit, [DECRYPT_DENIED])).toHaveLength(1);
  });

  it('with the audit log down, refuses every change with UNAVAILABLE and leaves nothing changed', async () => {
    await call(ops, 'createVariable', { key: 'KEPT', value: PLAIN, encrypted: true, userUuid });
    const rowsBefore = await secrets.query('SELECT * FROM public.ecosystem_variable ORDER BY key');
    const keyBefore = (await call(ops, 'describeStorage', {})).activeKeyId;
    const keyRingBefore = readFileSync(secrets.keyRingFile, 'utf8');
    await audit.stop();

    const refusals = [
      await failure(call(ops, 'createVariable', { key: 'NEW_ONE', value: OTHER, encrypted: true, userUuid })),
      await failure(call(ops, 'updateVariable', { key: 'KEPT', value: OTHER, userUuid })),
      await failure(call(ops, 'deleteVariable', { key: 'KEPT' })),
      await failure(call(ops, 'rotateKey', { keyId: '' })),
    ];
    expect(refusals.map((refusal) => refusal.code)).toEqual([status.UNAVAILABLE, status.UNAVAILABLE, status.UNAVAILABLE, status.UNAVAILABLE]);
    expect(refusals[0]?.details).toMatch(/audit event .* could not be written/);

    expect(await secrets.query('SELECT * FROM public.ecosystem_variable ORDER BY key')).toEqual(rowsBefore);
    expect((await call(ops, 'describeStorage', {})).activeKeyId).toBe(keyBefore);
    expect(readFileSync(secrets.keyRingFile, 'utf8')).toBe(keyRingBefore);
  });
});
