import { format, parseArgs } from 'node:util';
import { setLogger as setGrpcLogger } from '@grpc/grpc-js';
import { ConfigError, loadConfig, type LoomConfig } from '@loom/config';
import { ListenError, type LocalHttpServers, shutdownSignal } from '@loom/foundation';
import { createLogger, type Logger, PrometheusStartError, redactor, startTelemetry, type Telemetry } from '@loom/telemetry';
import { EXIT_USAGE } from './exit-codes.js';
import { describeStartupError } from './startup-error.js';
import { type RunningServices, startServices } from './run-services.js';
import { type ServiceModule } from './service-module.js';

/** Where a serving process gets its configuration. */
export interface ServeProcessOptions {
  readonly configFile?: string;
  readonly overrides?: readonly string[];
  readonly env?: NodeJS.ProcessEnv;
  /** Log destination; stdout when absent. */
  readonly logDestination?: NodeJS.WritableStream;
}

/** How `startServeProcess` starts, besides where its configuration comes from. */
export interface StartServeProcessOptions extends ServeProcessOptions {
  /**
   * Register this process's OpenTelemetry providers globally (default true). A composition started inside another
   * program (a test) passes false: the global providers can be registered once per process.
   */
  readonly registerTelemetry?: boolean;
  /** HTTP servers of this process that answer in memory (the skills of `loom serve --with-skills`), for the services that call them. */
  readonly localHttp?: LocalHttpServers;
}

/** Services serving in this process, with their logger and telemetry, until `stop`. */
export interface ServingProcess {
  /** The port the gRPC server listens on. */
  readonly port: number;
  /** Drains and stops the services, then the telemetry; logs why (`reason`, e.g. the signal) first. Idempotent. */
  stop(reason?: Readonly<Record<string, unknown>>): Promise<void>;
}

/**
 * Starts the modules as `loom serve` composes them (configuration, logger, telemetry, services) and resolves once
 * they listen, having logged 'loom listening'. Installs no signal handler: the caller decides when to stop. Throws
 * ConfigError for bad configuration before anything starts.
 */
export async function startServeProcess(modules: readonly ServiceModule[], options: StartServeProcessOptions = {}): Promise<ServingProcess> {
  const config = loadConfig({
    ...(options.configFile === undefined ? {} : { configFile: options.configFile }),
    ...(options.overrides === undefined ? {} : { overrides: options.overrides }),
    env: options.env ?? process.env,
  });
  const logger = createLogger({
    level: config.log.level,
    redactor,
    base: { service: 'loom', pid: process.pid },
    ...(options.logDestination === undefined ? {} : { destination: options.logDestination }),
  });
  logStartupDecisions(config, logger);
  const register = options.registerTelemetry ?? true;
  // a process of its own: grpc-js's console lines (a bind failure's among them) join its log, not its standard error
  if (register) setGrpcLogger(grpcLogger(logger));
  const telemetry = startTelemetry({
    serviceName: config.telemetry.serviceName,
    samplingRatio: config.telemetry.sampling.ratio,
    prometheusPort: config.telemetry.prometheus.port,
    redactor,
    register,
    ...(config.telemetry.otlp.endpoint === undefined ? {} : { otlpEndpoint: config.telemetry.otlp.endpoint }),
  });
  let running: RunningServices;
  try {
    await prometheusListening(telemetry, config);
    running = await startServices({ config, modules, logger, redactor, ...(options.localHttp === undefined ? {} : { localHttp: options.localHttp }) });
  } catch (error) {
    await telemetry.shutdown();
    throw error;
  }
  logger.info(
    { port: running.port, host: config.server.host, services: modules.map((module) => module.fullName), prometheus: telemetry.prometheusUrl },
    'loom listening',
  );
  let stopping: Promise<void> | undefined;
  const stop = async (reason: Readonly<Record<string, unknown>>): Promise<void> => {
    logger.info({ ...reason, deadlineMs: config.server.shutdown.deadlineMs }, 'shutting down');
    try {
      await running.stop();
      logger.info('stopped');
    } finally {
      await telemetry.shutdown();
    }
  };
  return {
    port: running.port,
    stop(reason = {}) {
      stopping ??= stop(reason);
      return stopping;
    },
  };
}

/**
 * Resolves once the Prometheus endpoint listens (at once when it is off); throws ListenError naming
 * loom.telemetry.prometheus.port when it cannot, so that a start never logs a scrape URL nothing serves.
 */
async function prometheusListening(telemetry: Telemetry, config: LoomConfig): Promise<void> {
  try {
    await telemetry.ready;
  } catch (error) {
    if (!(error instanceof PrometheusStartError)) throw error;
    throw new ListenError({ host: error.host, port: config.telemetry.prometheus.port, portSetting: 'loom.telemetry.prometheus.port' }, error.cause);
  }
}

/**
 * Serves the modules until SIGTERM or SIGINT, then drains and stops. Resolves once everything is
 * closed; throws ConfigError for bad configuration before anything starts.
 */
export async function serveProcess(modules: readonly ServiceModule[], options: ServeProcessOptions = {}): Promise<void> {
  // listening before the start, so that a signal during it still ends in a graceful stop
  const stopSignal = shutdownSignal();
  const serving = await startServeProcess(modules, options);
  const signal = await stopSignal;
  await serving.stop({ signal });
}

/** grpc-js's logger as lines of `logger` (grpc-js writes `E …` to standard error by default). */
function grpcLogger(logger: Logger): Partial<Console> {
  const grpc = logger.child({ component: 'grpc-js' });
  return {
    error: (...args: unknown[]) => grpc.error(format(...args)),
    info: (...args: unknown[]) => grpc.info(format(...args)),
    debug: (...args: unknown[]) => grpc.debug(format(...args)),
  };
}

function logStartupDecisions(config: LoomConfig, logger: Logger): void {
  if (config.experimental.enabled) {
    logger.warn('loom.experimental.enabled is on: script components (user code) are available; the production default is off');
  }
  if (!config.security.serverPolicy.enabled) {
    logger.warn('loom.security.serverPolicy.enabled is off: scripts keep only time, memory and network limits');
  }
  if (config.auth.allowAnonymous) {
    logger.warn('loom.auth.allowAnonymous is on: callers without credentials may use unrestricted RPCs');
  }
  logger.info({ enabled: config.security.audit.enabled, path: config.security.audit.log.path }, 'audit logging');
}

export { EXIT_USAGE } from './exit-codes.js';

/** `main` of a single-service deployment: `--config FILE`, repeatable `--set key=value`. */
export async function runMain(modules: readonly ServiceModule[], argv: readonly string[]): Promise<void> {
  let values: { config?: string; set?: string[] };
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: { config: { type: 'string' }, set: { type: 'string', multiple: true } },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    process.stderr.write(`loom: ${(error as Error).message}\n`);
    process.exit(EXIT_USAGE);
  }
  try {
    await serveProcess(modules, {
      ...(values.config === undefined ? {} : { configFile: values.config }),
      ...(values.set === undefined ? {} : { overrides: values.set }),
    });
    process.exit(0);
  } catch (error) {
    process.stderr.write(`loom: ${describeStartupError(error)}\n`);
    process.exit(error instanceof ConfigError ? EXIT_USAGE : 1);
  }
}
