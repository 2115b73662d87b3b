import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AuditClient, type AuditEvent, AuditEventType } from '@loom/contracts';
import { auditEvent, createClient, type RunningServices } from '@loom/service-kit';
import { serveForTest } from '@loom/service-kit/testing';
import { auditModule } from '../src/index.js';

export const executorToken = 'executor-token-0123456789abcdef';

/** A fresh directory for one audit log. */
export function logPath(): string {
  return join(mkdtempSync(join(tmpdir(), 'loom-audit-')), 'audit.log');
}

/** Config overrides of an audit service on `path`, with the executor's token. */
export function auditOverrides(path: string, extra: readonly string[] = []): string[] {
  // one client writes, reads and verifies: the executor's identity appends, and admin lets it verify
  return [`loom.security.audit.log.path=${path}`, `loom.auth.tokens.executor=${executorToken}`, 'loom.auth.roles.executor=admin', ...extra];
}

export interface AuditHarness {
  readonly running: RunningServices;
  readonly executor: AuditClient;
  readonly anonymous: AuditClient;
  stop(): Promise<void>;
}

export async function startAudit(path: string, extra: readonly string[] = []): Promise<AuditHarness> {
  const running = await serveForTest([auditModule], auditOverrides(path, extra));
  const address = `127.0.0.1:${running.port}`;
  const executor = createClient(AuditClient, address, { token: executorToken, retry: false });
  const anonymous = createClient(AuditClient, address, { retry: false });
  return {
    running,
    executor,
    anonymous,
    async stop() {
      executor.close();
      anonymous.close();
      await running.stop();
    },
  };
}

/** An Append event with every field empty but the type. */
export function event(type: AuditEventType, fields: Partial<AuditEvent> = {}): AuditEvent {
  return auditEvent({ ...fields, type });
}

export { AuditEventType };
export { failure } from '@loom/service-kit/testing';
