import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { type ChannelCredentials, credentials as channelCredentials, ServerCredentials } from '@grpc/grpc-js';
import { type LoomConfig, type ServiceName, serviceNames, type TlsConfig, tlsFiles } from '@loom/config';
import { ListenError, type LocalHttpServers } from '@loom/foundation';
import { type Logger, type SecretRedactor, redactor as defaultRedactor } from '@loom/telemetry';
import { clientTracingInterceptor, rpcMetricsInterceptor, serverTracingInterceptor } from '@loom/telemetry/grpc';
import { metrics } from '@opentelemetry/api';
import { Authenticator, type Refusal } from './auth.js';
import { signInOf } from './credentials.js';
import { refusalAudit } from './refusal-audit.js';
import { LoomServer, ServerStateError } from './server.js';
import { ServiceClients } from './service-clients.js';
import { configSlice, type ServiceInstance, type ServiceModule } from './service-module.js';

/** What `startServices` runs and with what. */
export interface StartServicesOptions {
  readonly config: LoomConfig;
  readonly modules: readonly ServiceModule[];
  readonly logger: Logger;
  /** Receives every token and key this process generates, so none reaches a log. */
  readonly redactor?: SecretRedactor;
  /** HTTP servers of this process that answer in memory, given to every service (ServiceContext.localHttp). */
  readonly localHttp?: LocalHttpServers;
}

/** A process serving a set of loom services on one port. */
export interface RunningServices {
  readonly port: number;
  readonly server: LoomServer;
  /** Drains and stops the server, then closes the services and their clients. */
  stop(): Promise<void>;
}

/** The credentials of a process with TLS: its server's and its clients'. */
interface TlsCredentials {
  readonly server: ServerCredentials;
  readonly client: ChannelCredentials;
}

/**
 * Builds the given services, serves them on `server.port` and wires their clients: a unary call to a
 * service of this process runs in memory through the server's interceptors and handler (LocalChannel; its
 * streams go over gRPC to this port), any other call to `loom.services.<name>.address`.
 */
export async function startServices(options: StartServicesOptions): Promise<RunningServices> {
  const { config, logger } = options;
  const redactor = options.redactor ?? defaultRedactor;
  const tokens = serviceTokens(config, logger);
  for (const token of Object.values(tokens)) redactor.add(token);
  const tlsConfig = tlsFiles(config.tls);
  const tls = tlsConfig === undefined ? undefined : loadTls(tlsConfig);
  const hosted = options.modules.map((module) => module.name);
  // resolved at a client's first call, once the server is listening
  const addressOf = serviceAddresses(config, hosted, logger, () => server.port);
  const refusals = refusalAudit({ hosted, tokens, addressOf, logger, ...(tls === undefined ? {} : { credentials: tls.client }) });
  const server = createServer(config, logger, tokens, tls, refusals.onRefused);

  const allClients: ServiceClients[] = [];
  const instances: ServiceInstance[] = [];
  const closeServices = async (): Promise<void> => {
    for (const instance of instances.reverse()) await instance.close();
    for (const clients of allClients) clients.close();
    refusals.close();
  };
  try {
    for (const module of options.modules) {
      const clients = new ServiceClients({
        addressOf,
        localServer: (service) => (hosted.includes(service) && config.services[service].address === undefined ? server.local : undefined),
        token: tokens[module.name],
        identity: module.name,
        interceptors: [clientTracingInterceptor()],
        ...(tls === undefined ? {} : { credentials: tls.client }),
      });
      allClients.push(clients);
      const instance = await module.create({
        config: configSlice(config, module.configSections),
        logger: logger.child({ service: module.name }),
        clients,
        ...(options.localHttp === undefined ? {} : { localHttp: options.localHttp }),
      });
      instances.push(instance);
      instance.addToServer(server);
    }
    const { host, port: requested } = config.server;
    const port = await server.listen(host, requested).catch((error: unknown) => {
      if (error instanceof ServerStateError) throw error;
      throw new ListenError({ host, port: requested, portSetting: 'server.port', hostSetting: 'server.host' }, error);
    });
    return {
      port,
      server,
      async stop() {
        // the services' own work first, while the server still answers the calls it makes (an in-memory call is refused
        // once the server's shutdown begins): the executor's runs drain and their stops are audited
        for (const instance of [...instances].reverse()) await instance.quiesce?.();
        await server.shutdown(config.server.shutdown.deadlineMs);
        // records of refusals made before the shutdown are written while the audit service still runs
        await refusals.written();
        await closeServices();
      },
    };
  } catch (error) {
    await server.shutdown(0);
    await closeServices();
    throw error;
  }
}

/** The gRPC server of a process: authentication (tokens, roles, sign-in, client certificates), tracing and metrics. */
function createServer(
  config: LoomConfig,
  logger: Logger,
  tokens: Readonly<Record<string, string>>,
  tls: TlsCredentials | undefined,
  onRefused: (refusal: Refusal) => void,
): LoomServer {
  return new LoomServer({
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
}

/** Where each service is called: `loom.services.<name>.address`, else this process's own port (warned about when it does not host it). */
function serviceAddresses(config: LoomConfig, hosted: readonly ServiceName[], logger: Logger, ownPort: () => number): (service: ServiceName) => string {
  const localHost = config.server.host === '0.0.0.0' || config.server.host === '::' ? '127.0.0.1' : config.server.host;
  return (service) => {
    const configured = config.services[service].address;
    if (configured !== undefined) return configured;
    if (!hosted.includes(service)) logger.warn({ service }, `loom.services.${service}.address is not set; calling this process`);
    return `${localHost}:${ownPort()}`;
  };
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

function loadTls(tls: TlsConfig): TlsCredentials {
  const ca = readFileSync(tls.caFile);
  const cert = readFileSync(tls.certFile);
  const key = readFileSync(tls.keyFile);
  return {
    server: ServerCredentials.createSsl(ca, [{ cert_chain: cert, private_key: key }], true),
    client: channelCredentials.createSsl(ca, key, cert),
  };
}
