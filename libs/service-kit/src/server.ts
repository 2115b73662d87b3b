import { type handleUnaryCall, Server, ServerCredentials, type ServerInterceptor } from '@grpc/grpc-js';
import { descriptorSetPath } from '@loom/contracts';
import { Lifecycle, ShutdownOnce, type TransitionTable } from '@loom/foundation';
import { type Authenticator } from './auth.js';
import { MAX_MESSAGE_BYTES } from './client.js';
import { type ErrorSink } from './errors.js';
import { adaptImplementation, type AsyncImplementation, type ServiceDefinitionLike } from './handlers.js';
import { healthDefinition, HealthService } from './health.js';
import { LocalEndpoint } from './local-channel.js';
import { HEALTH_SERVICE, REFLECTION_SERVICES, reflectionDefinitions, reflectionHandler } from './reflection.js';

/** Life cycle of a server; a stopped server cannot be restarted. */
export type ServerState = 'starting' | 'running' | 'stopping' | 'stopped';

const SERVER_TRANSITIONS: TransitionTable<ServerState> = {
  starting: ['running', 'stopping'],
  running: ['stopping'],
  stopping: ['stopped'],
  stopped: [],
};

/** What a LoomServer needs; the logger receives the detail of errors hidden from callers. */
export interface LoomServerOptions {
  readonly logger: ErrorSink & { info(fields: Record<string, unknown>, message: string): void; warn(fields: Record<string, unknown>, message: string): void };
  readonly authenticator: Authenticator;
  /** Server credentials; insecure (plaintext) when absent. */
  readonly credentials?: ServerCredentials;
  /** Interceptors that run before authentication (tracing, metrics), outermost first. */
  readonly interceptors?: readonly ServerInterceptor[];
}

/** Per-service options of `addService`. */
export interface AddServiceOptions<D> {
  /** RPCs only the named identities may call, by method name (`decryptResources: ['executor']`). */
  readonly restrict?: Partial<Record<keyof D, readonly string[]>>;
}

/**
 * A grpc-js server with health (per service name), reflection of the loom.v1 services it
 * serves, authentication, typed error mapping and a graceful, deadline-bounded shutdown.
 */
export class LoomServer {
  private readonly server: Server;
  private readonly health = new HealthService();
  private readonly serviceNames: string[] = [];
  private readonly shutdownController = new AbortController();
  private readonly lifecycle = new Lifecycle<ServerState>('gRPC server', SERVER_TRANSITIONS, 'starting');
  private readonly shutdownOnce = new ShutdownOnce((deadlineMs: number) => this.stop(deadlineMs));
  private boundPort: number | undefined;
  /** The unary RPCs for clients of this process, through the same interceptors (LocalChannel). */
  readonly local: LocalEndpoint;

  constructor(private readonly options: LoomServerOptions) {
    const interceptors = [...(options.interceptors ?? []), options.authenticator.interceptor()];
    this.local = new LocalEndpoint(interceptors);
    this.server = new Server({
      interceptors,
      'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
      'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
      // channelz keeps per-call statistics and references for a channelz service loom does not serve: about a tenth of
      // the server's busy time under unary load
      'grpc.enable_channelz': 0,
    });
    this.health.setStatus('', 'NOT_SERVING');
    this.server.addService(healthDefinition, this.adapt(healthDefinition, this.health.handlers()));
  }

  private adapt(definition: Parameters<typeof adaptImplementation>[0], implementation: object): ReturnType<typeof adaptImplementation> {
    return adaptImplementation(definition, implementation as Record<string, unknown>, {
      errorSink: this.options.logger,
      shutdownSignal: this.shutdownController.signal,
    });
  }

  get state(): ServerState {
    return this.lifecycle.state;
  }

  /** The port the server listens on, once `listen` resolved. */
  get port(): number {
    if (this.boundPort === undefined) throw new ServerStateError('the server is not listening yet');
    return this.boundPort;
  }

  /** Aborted when shutdown begins; long-running handlers (streams) end on it. */
  get shutdownSignal(): AbortSignal {
    return this.shutdownController.signal;
  }

  /** Registers a service under its full name (`loom.v1.Secrets`) with async handlers. */
  addService<D extends ServiceDefinitionLike>(
    serviceName: string,
    definition: D,
    implementation: AsyncImplementation<D>,
    options: AddServiceOptions<D> = {},
  ): void {
    if (!this.lifecycle.is('starting')) throw new ServerStateError('services must be added before the server listens');
    for (const [method, identities] of Object.entries(options.restrict ?? {}) as [string, readonly string[]][]) {
      const methodDefinition = definition[method];
      if (methodDefinition === undefined) throw new ServerStateError(`${serviceName} has no method ${method}`);
      this.options.authenticator.restrict(methodDefinition.path, identities);
    }
    const adapted = this.adapt(definition, implementation);
    this.server.addService(definition as never, adapted);
    for (const [name, method] of Object.entries(definition)) {
      if (method.requestStream || method.responseStream) continue;
      this.local.add({
        path: method.path,
        requestDeserialize: method.requestDeserialize,
        responseSerialize: method.responseSerialize,
        handler: adapted[name] as handleUnaryCall<unknown, unknown>,
      });
    }
    this.serviceNames.push(serviceName);
    this.health.setStatus(serviceName, 'NOT_SERVING');
  }

  /** Binds the port (0 picks a free one), starts reflection and reports every service SERVING. */
  async listen(host: string, port: number): Promise<number> {
    if (!this.lifecycle.is('starting')) throw new ServerStateError(`cannot listen in state ${this.lifecycle.state}`);
    const listed = [...this.serviceNames, HEALTH_SERVICE, ...REFLECTION_SERVICES];
    const reflection = reflectionHandler(descriptorSetPath, listed, this.options.logger);
    for (const { definition } of reflectionDefinitions()) this.server.addService(definition, this.adapt(definition, { ServerReflectionInfo: reflection }));
    const credentials = this.options.credentials ?? ServerCredentials.createInsecure();
    this.boundPort = await new Promise<number>((resolve, reject) => {
      this.server.bindAsync(`${host}:${port}`, credentials, (error, bound) => (error ? reject(error) : resolve(bound)));
    });
    this.lifecycle.to('running');
    for (const name of this.serviceNames) this.health.setStatus(name, 'SERVING');
    this.health.setStatus('', 'SERVING');
    return this.boundPort;
  }

  /**
   * Stops taking calls, ends open streams cleanly, lets in-flight calls finish, and after
   * `deadlineMs` cancels whatever is left. A second call waits for the first (whose deadline holds).
   */
  shutdown(deadlineMs: number): Promise<void> {
    return this.shutdownOnce.call(deadlineMs);
  }

  private async stop(deadlineMs: number): Promise<void> {
    this.lifecycle.to('stopping');
    for (const name of ['', ...this.serviceNames]) this.health.setStatus(name, 'NOT_SERVING');
    this.shutdownController.abort();
    this.local.close();
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.options.logger.warn({ deadlineMs }, 'shutdown deadline passed; cancelling remaining calls');
        this.server.forceShutdown();
        this.local.cancelAll();
        resolve();
      }, deadlineMs);
      timer.unref();
      const served = new Promise<void>((done) => this.server.tryShutdown(() => done()));
      void Promise.all([served, this.local.drained()]).then(() => {
        clearTimeout(timer);
        resolve();
      });
    });
    this.lifecycle.to('stopped');
  }
}

/** An operation does not fit the server's life-cycle state. */
export class ServerStateError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ServerStateError';
  }
}
