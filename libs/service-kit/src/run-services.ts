import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { type ChannelCredentials, credentials as channelCredentials, ServerCredentials, status } from '@grpc/grpc-js';
import { type LoomConfig, type ServiceName, serviceNames, type TlsConfig, tlsFiles } from '@loom/config';
import {
  clientTracingInterceptor,
  type Logger,
  type SecretRedactor,
  redactor as defaultRedactor,
  rpcMetricsInterceptor,
  serverTracingInterceptor,
} from '@loom/telemetry';
import { metrics } from '@opentelemetry/api';
import { AuditEventType } from '@loom/contracts';
import { Authenticator, type Refusal } from './auth.js';
import { signInOf } from './credentials.js';
import { AuditAppender } from './audit-client.js';
import { LoomServer } from './server.js';
import { ServiceClients } from './service-clients.js';
import { configSlice, type ServiceInstance, type ServiceModule } from './service-module.js';

/** What `startServices` runs and with what. */
export interface StartServicesOptions {
  readonly config: LoomConfig;
  readonly modules: readonly ServiceModule[];
  readonly logger: Logger;
  /** Receives every token and key this process generates, so none reaches a log. */
  readonly redactor?: SecretRedactor;
}

const DECRYPT_RESOURCES_PATH = '/loom.v1.Secrets/DecryptResources';

/** A process serving a set of loom services on one port. */
export interface RunningServices {
  readonly port: number;
  readonly server: LoomServer;
  /** Drains and stops the server, then closes the services and their clients. */
  stop(): Promise<void>;
}

/**
 * Builds the given services, serves them on `server.port` and wires their clients: a call to a
 * service of this process goes over gRPC to this port, any other to `loom.services.<name>.address`.
 */
export async function startServices(options: StartServicesOptions): Promise<RunningServices> {
  const { config, logger } = options;
  const redactor = options.redactor ?? defaultRedactor;
  const tokens = serviceTokens(config, logger);
  for (const token of Object.values(tokens)) redactor.add(token);
  const tlsConfig = tlsFiles(config.tls);
  const tls = tlsConfig === undefined ? undefined : loadTls(tlsConfig);

  // Refusals are audited by this process under the identity of a service it hosts that writes to the
  // audit log (the audit service itself does not); a process hosting only the audit service logs them.
  const auditor = options.modules.map((module) => module.name).find((name) => name !== 'audit');
  const refusalAudit = new ServiceClients({
    addressOf: (service) => addressOf(service),
    token: auditor === undefined ? undefined : tokens[auditor],
    interceptors: [],
    ...(tls === undefined ? {} : { credentials: tls.client }),
  });
  let refusalAppender: AuditAppender | undefined;
  const refusalRecords = new Set<Promise<void>>();
  const onRefused = (refusal: Refusal): void => {
    logger.warn({ rpc: refusal.path, identity: refusal.identity, code: status[refusal.code], reason: refusal.reason }, 'call refused');
    // a refused audit append is not itself appended: that could refuse again, without end
    if (refusal.code !== status.PERMISSION_DENIED || auditor === undefined || refusal.path.startsWith('/loom.v1.Audit/Append')) return;
    refusalAppender ??= new AuditAppender(refusalAudit.get('audit'));
    // The refusal stands whether or not its record is written; a failed write is logged, not retried.
    const record = refusalAppender
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
      .finally(() => refusalRecords.delete(record));
    refusalRecords.add(record);
  };

  const server = new LoomServer({
    logger,
    authenticator: new Authenticator({
      tokens,
      roles: config.auth.roles,
      allowAnonymous: config.auth.allowAnonymous,
      anonymousRoles: config.auth.anonymousRoles,
      clientCertificates: tls !== undefined,
      ...signInOf(config.auth),
      onRefused,
    }),
    interceptors: [serverTracingInterceptor(), rpcMetricsInterceptor(metrics.getMeter('@loom/service-kit'))],
    ...(tls === undefined ? {} : { credentials: tls.server }),
  });

  const hosted = new Set(options.modules.map((module) => module.name));
  const localHost = config.server.host === '0.0.0.0' || config.server.host === '::' ? '127.0.0.1' : config.server.host;
  const addressOf = (service: ServiceName): string => {
    const configured = config.services[service].address;
    if (configured !== undefined) return configured;
    if (!hosted.has(service)) logger.warn({ service }, `loom.services.${service}.address is not set; calling this process`);
    return `${localHost}:${server.port}`;
  };

  const allClients: ServiceClients[] = [];
  const instances: ServiceInstance[] = [];
  try {
    for (const module of options.modules) {
      const clients = new ServiceClients({
        addressOf,
        token: tokens[module.name],
        interceptors: [clientTracingInterceptor()],
        ...(tls === undefined ? {} : { credentials: tls.client }),
      });
      allClients.push(clients);
      const instance = await module.create({ config: configSlice(config, module.configSections), logger: logger.child({ service: module.name }), clients });
      instances.push(instance);
      instance.addToServer(server);
    }
    const port = await server.listen(config.server.host, config.server.port);
    return {
      port,
      server,
      async stop() {
        await server.shutdown(config.server.shutdown.deadlineMs);
        // records of refusals made before the shutdown are written while the audit service still runs
        await Promise.all(refusalRecords);
        for (const instance of instances.reverse()) await instance.close();
        for (const clients of allClients) clients.close();
        refusalAudit.close();
      },
    };
  } catch (error) {
    await server.shutdown(0);
    for (const instance of instances.reverse()) await instance.close();
    for (const clients of allClients) clients.close();
    refusalAudit.close();
    throw error;
  }
}

/**
 * The bearer token of every identity. A service identity without a configured token gets a
 * random one for this process only: enough when all services share a process, and a warning
 * when they do not, since other processes cannot know it.
 */
function serviceTokens(config: LoomConfig, logger: Logger): Record<string, string> {
  const tokens: Record<string, string> = { ...config.auth.tokens };
  const generated: ServiceName[] = [];
  for (const service of serviceNames) {
    if (tokens[service] !== undefined) continue;
    tokens[service] = randomBytes(32).toString('base64url');
    generated.push(service);
  }
  const split = serviceNames.some((service) => config.services[service].address !== undefined);
  if (generated.length > 0 && split) {
    logger.warn({ identities: generated }, 'no loom.auth.tokens.<identity> configured for these services; calls between processes will be refused');
  }
  return tokens;
}

function loadTls(tls: TlsConfig): { server: ServerCredentials; client: ChannelCredentials } {
  const ca = readFileSync(tls.caFile);
  const cert = readFileSync(tls.certFile);
  const key = readFileSync(tls.keyFile);
  return {
    server: ServerCredentials.createSsl(ca, [{ cert_chain: cert, private_key: key }], true),
    client: channelCredentials.createSsl(ca, key, cert),
  };
}
