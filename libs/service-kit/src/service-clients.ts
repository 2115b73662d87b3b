import { type ChannelCredentials, type Client, type Interceptor, InterceptingCall, status as grpcStatus, type StatusObject } from '@grpc/grpc-js';
import { AuditClient, ExecutorClient, SchedulerClient, SecretsClient, SkillGatewayClient, WorkflowStoreClient } from '@loom/contracts';
import { type ServiceName } from '@loom/config';
import { type ClientConstructor, createClient } from './client.js';
import { LocalChannel, type LocalEndpoint } from './local-channel.js';

/** The generated client class of each service. */
export const clientConstructors = {
  'config-store': WorkflowStoreClient,
  scheduler: SchedulerClient,
  executor: ExecutorClient,
  secrets: SecretsClient,
  'skill-gateway': SkillGatewayClient,
  audit: AuditClient,
} as const;

/** The client type of a service. */
export type ClientOf<S extends ServiceName> = InstanceType<(typeof clientConstructors)[S]>;

/** How ServiceClients reaches the other services. */
export interface ServiceClientsOptions {
  /** Address of a service, resolved at first use (the server's own port is known only after listen). */
  readonly addressOf: (service: ServiceName) => string;
  /** Bearer token of the calling identity. */
  readonly token?: string;
  /**
   * The calling identity (the service these clients call for): a call another service refuses (UNAUTHENTICATED,
   * PERMISSION_DENIED) then fails FAILED_PRECONDITION naming it and loom.auth.tokens.<identity>, not as if the
   * operator's own token were wrong (refusedServiceCall).
   */
  readonly identity?: ServiceName;
  readonly credentials?: ChannelCredentials;
  readonly interceptors?: readonly Interceptor[];
  /**
   * The server of this process that hosts a service, if it does: its unary RPCs are then called in memory
   * (LocalChannel), through the same interceptors, identity check and handlers as over its port.
   */
  readonly localServer?: (service: ServiceName) => LocalEndpoint | undefined;
}

/** Lazily created, cached clients to loom's services, all presenting one identity. */
export class ServiceClients {
  private readonly clients = new Map<ServiceName, Client>();

  constructor(private readonly options: ServiceClientsOptions) {}

  /** The client of a service, created on first use. */
  get<S extends ServiceName>(service: S): ClientOf<S> {
    let client = this.clients.get(service);
    if (client === undefined) {
      const { identity, credentials } = this.options;
      // outermost, so the tracing interceptors record the status the other service answered
      const interceptors = [
        ...(identity === undefined ? [] : [refusedCallInterceptor(identity, service, credentials !== undefined)]),
        ...(this.options.interceptors ?? []),
      ];
      const local = this.options.localServer?.(service);
      const options = {
        ...(this.options.token === undefined ? {} : { token: this.options.token }),
        ...(credentials === undefined ? {} : { credentials }),
        ...(local === undefined ? {} : { channelFactory: LocalChannel.factory(local) }),
        interceptors,
      };
      client = createClient(clientConstructors[service] as unknown as ClientConstructor<Client>, this.options.addressOf(service), options);
      this.clients.set(service, client);
    }
    return client as ClientOf<S>;
  }

  /** Closes every client created so far. */
  close(): void {
    for (const client of this.clients.values()) client.close();
    this.clients.clear();
  }
}

/** How a service is named in a sentence ("the config store"), in errors of the services and the console. */
export const SERVICE_TITLES: Readonly<Record<ServiceName, string>> = {
  'config-store': 'the config store',
  scheduler: 'the scheduler',
  executor: 'the executor',
  secrets: 'the secrets service',
  'skill-gateway': 'the skill gateway',
  audit: 'the audit service',
};

/**
 * The text of a service-to-service call another service refused: who called whom, what it answered and the setting
 * that decides it, e.g. "the executor's call to the config store was refused (invalid bearer token): set
 * loom.auth.tokens.executor to the same token in the executor's process and in the config store's".
 */
export function refusedServiceCall(caller: ServiceName, callee: ServiceName, answer: string, clientCertificates = false): string {
  const from = SERVICE_TITLES[caller];
  const to = SERVICE_TITLES[callee];
  const certificate = clientCertificates ? `, or give ${from} a client certificate whose common name is ${caller}` : '';
  return (
    `${from}'s call to ${to} was refused (${answer}): set loom.auth.tokens.${caller} to the same token in ` + `${from}'s process and in ${to}'s${certificate}`
  );
}

/** Turns another service's refusal of this identity's call into FAILED_PRECONDITION with refusedServiceCall's text. */
function refusedCallInterceptor(caller: ServiceName, callee: ServiceName, clientCertificates: boolean): Interceptor {
  const rewrite = (received: StatusObject): StatusObject => {
    if (received.code !== grpcStatus.UNAUTHENTICATED && received.code !== grpcStatus.PERMISSION_DENIED) return received;
    const answer = `${grpcStatus[received.code]}: ${received.details}`;
    return { ...received, code: grpcStatus.FAILED_PRECONDITION, details: refusedServiceCall(caller, callee, answer, clientCertificates) };
  };
  return (options, nextCall) =>
    new InterceptingCall(nextCall(options), {
      start(metadata, _listener, next) {
        // a partial listener: grpc-js passes what it leaves out straight on to `listener`
        next(metadata, { onReceiveStatus: (received, nextStatus) => nextStatus(rewrite(received)) });
      },
    });
}
