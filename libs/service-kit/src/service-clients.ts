import { type ChannelCredentials, type Client, type Interceptor } from '@grpc/grpc-js';
import { AuditClient, ExecutorClient, SchedulerClient, SecretsClient, SkillGatewayClient, WorkflowStoreClient } from '@loom/contracts';
import { type ServiceName } from '@loom/config';
import { type ClientConstructor, createClient } from './client.js';

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
  readonly credentials?: ChannelCredentials;
  readonly interceptors?: readonly Interceptor[];
}

/** Lazily created, cached clients to loom's services, all presenting one identity. */
export class ServiceClients {
  private readonly clients = new Map<ServiceName, Client>();

  constructor(private readonly options: ServiceClientsOptions) {}

  /** The client of a service, created on first use. */
  get<S extends ServiceName>(service: S): ClientOf<S> {
    let client = this.clients.get(service);
    if (client === undefined) {
      const options = {
        ...(this.options.token === undefined ? {} : { token: this.options.token }),
        ...(this.options.credentials === undefined ? {} : { credentials: this.options.credentials }),
        ...(this.options.interceptors === undefined ? {} : { interceptors: this.options.interceptors }),
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
