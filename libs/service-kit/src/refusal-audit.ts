import { type ChannelCredentials, status } from '@grpc/grpc-js';
import { type ServiceName } from '@loom/config';
import { AuditEventType } from '@loom/contracts';
import { type Logger } from '@loom/telemetry';
import { AuditAppender } from './audit-client.js';
import { type Refusal } from './auth.js';
import { ServiceClients } from './service-clients.js';

const DECRYPT_RESOURCES_PATH = '/loom.v1.Secrets/DecryptResources';

/** What a process's refusal auditor needs. */
export interface RefusalAuditOptions {
  /** Names of the services this process hosts. */
  readonly hosted: readonly ServiceName[];
  /** Bearer tokens by identity. */
  readonly tokens: Readonly<Record<string, string>>;
  readonly addressOf: (service: ServiceName) => string;
  readonly credentials?: ChannelCredentials;
  readonly logger: Logger;
}

/** Logs every refused call and appends the PERMISSION_DENIED ones to the audit log. */
export interface RefusalAudit {
  /** The authenticator's `onRefused`. */
  readonly onRefused: (refusal: Refusal) => void;
  /** Resolves once the records of the refusals made so far are written (or failed and logged). */
  written(): Promise<void>;
  /** Closes the audit client. */
  close(): void;
}

/**
 * Refusals are audited by this process under the identity of a service it hosts that writes to the
 * audit log (the audit service itself does not); a process hosting only the audit service logs them.
 */
export function refusalAudit(options: RefusalAuditOptions): RefusalAudit {
  const { logger } = options;
  const auditor = options.hosted.find((name) => name !== 'audit');
  const clients = new ServiceClients({
    addressOf: options.addressOf,
    token: auditor === undefined ? undefined : options.tokens[auditor],
    ...(auditor === undefined ? {} : { identity: auditor }),
    interceptors: [],
    ...(options.credentials === undefined ? {} : { credentials: options.credentials }),
  });
  let appender: AuditAppender | undefined;
  const records = new Set<Promise<void>>();
  const onRefused = (refusal: Refusal): void => {
    logger.warn({ rpc: refusal.path, identity: refusal.identity, code: status[refusal.code], reason: refusal.reason }, 'call refused');
    // a refused audit append is not itself appended: that could refuse again, without end
    if (refusal.code !== status.PERMISSION_DENIED || auditor === undefined || refusal.path.startsWith('/loom.v1.Audit/Append')) return;
    appender ??= new AuditAppender(clients.get('audit'));
    // The refusal stands whether or not its record is written; a failed write is logged, not retried.
    const record = appender
      .append({
        // a refused DecryptResources is the one refusal with its own event type: someone wanted plain secrets
        type: refusal.path === DECRYPT_RESOURCES_PATH ? AuditEventType.AUDIT_EVENT_TYPE_DECRYPT_DENIED : AuditEventType.AUDIT_EVENT_TYPE_PERMISSION_DENIED,
        actor: refusal.identity ?? 'anonymous',
        reason: refusal.reason,
        attributes: { rpc: refusal.path },
      })
      .then(
        () => undefined,
        (error: unknown) => logger.error({ err: error, rpc: refusal.path }, 'the audit event of a refused call could not be written'),
      )
      .finally(() => records.delete(record));
    records.add(record);
  };
  return {
    onRefused,
    written: async () => {
      await Promise.all(records);
    },
    close: () => clients.close(),
  };
}
