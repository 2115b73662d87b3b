import { type LoomConfig, type ServiceName } from '@loom/config';
import { NotImplementedError } from '@loom/domain';
import { type LocalHttpServers } from '@loom/foundation';
import { type Logger } from '@loom/telemetry';
import { type ServiceClients } from './service-clients.js';
import { type AsyncImplementation, type ServiceDefinitionLike } from './handlers.js';
import { type LoomServer } from './server.js';

/** A top-level section of the configuration (`security`, `secrets`, `scheduler`…). */
export type ConfigSection = keyof LoomConfig;

/** What a service gets when it is built: its slice of the config, a logger, and clients to the other services. */
export interface ServiceContext<S extends ConfigSection = ConfigSection> {
  /** Only the sections the service declares in `configSections`: a service does not read another's settings. */
  readonly config: Pick<LoomConfig, S>;
  readonly logger: Logger;
  /** Clients to other services that present this service's own identity. */
  readonly clients: ServiceClients;
  /** HTTP servers of this process that answer in memory (the skills beside `loom serve --with-skills`), if any. */
  readonly localHttp?: LocalHttpServers;
}

/** A built service: it registers its RPCs on a server and releases its resources on close. */
export interface ServiceInstance {
  addToServer(server: LoomServer): void;
  /**
   * Finishes the work the service does on its own (the executor's runs) at shutdown, before the server stops: what that
   * work calls, the process's other services in memory included, still answers, and the audit events of its end are
   * written. Called once, in the reverse order of creation, before `close`.
   */
  quiesce?(): Promise<void>;
  close(): Promise<void>;
}

/** A loom service as a unit of deployment: `loom serve --services <name>` runs it. */
export interface ServiceModule<S extends ConfigSection = ConfigSection> {
  /** Short name, also the service's identity (`secrets`). */
  readonly name: ServiceName;
  /** Full proto name (`loom.v1.Secrets`). */
  readonly fullName: string;
  /** The configuration sections the service reads; `create` gets those only. */
  readonly configSections: readonly S[];
  create(context: ServiceContext<S>): Promise<ServiceInstance>;
}

/** The sections of a configuration a service declared (the objects themselves, not copies). */
export function configSlice<S extends ConfigSection>(config: LoomConfig, sections: readonly S[]): Pick<LoomConfig, S> {
  const slice: Partial<Record<ConfigSection, unknown>> = {};
  for (const section of sections) slice[section] = config[section];
  return slice as Pick<LoomConfig, S>;
}

/**
 * Handlers for every RPC of a definition that answer UNIMPLEMENTED, naming the capability that
 * will provide them, so a caller learns what is missing instead of getting a fake answer.
 */
export function unimplemented<D extends ServiceDefinitionLike>(definition: D, capabilityByMethod: Record<keyof D, string>): AsyncImplementation<D> {
  const implementation: Record<string, () => Promise<never>> = {};
  for (const [method, { path }] of Object.entries(definition)) {
    const capability = capabilityByMethod[method as keyof D];
    implementation[method] = () => Promise.reject(new NotImplementedError(`${path.slice(1)} (${capability})`));
  }
  return implementation as AsyncImplementation<D>;
}
