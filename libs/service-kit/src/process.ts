import { parseArgs } from 'node:util';
import { ConfigError, loadConfig, type LoomConfig } from '@loom/config';
import { createLogger, type Logger, redactor, startTelemetry } from '@loom/telemetry';
import { EXIT_USAGE } from './exit-codes.js';
import { describeStartupError } from './startup-error.js';
import { startServices } from './run-services.js';
import { type ServiceModule } from './service-module.js';

/** Where a serving process gets its configuration. */
export interface ServeProcessOptions {
  readonly configFile?: string;
  readonly overrides?: readonly string[];
  readonly env?: NodeJS.ProcessEnv;
  /** Log destination; stdout when absent. */
  readonly logDestination?: NodeJS.WritableStream;
}

/** The signals that begin a graceful shutdown. */
export const SHUTDOWN_SIGNALS = ['SIGTERM', 'SIGINT'] as const;

/**
 * Serves the modules until SIGTERM or SIGINT, then drains and stops. Resolves once everything is
 * closed; throws ConfigError for bad configuration before anything starts.
 */
export async function serveProcess(modules: readonly ServiceModule[], options: ServeProcessOptions = {}): Promise<void> {
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
  const telemetry = startTelemetry({
    serviceName: config.telemetry.serviceName,
    samplingRatio: config.telemetry.sampling.ratio,
    prometheusPort: config.telemetry.prometheus.port,
    redactor,
    ...(config.telemetry.otlp.endpoint === undefined ? {} : { otlpEndpoint: config.telemetry.otlp.endpoint }),
  });
  const stopSignal = new Promise<NodeJS.Signals>((resolve) => {
    for (const signal of SHUTDOWN_SIGNALS) process.once(signal, () => resolve(signal));
  });
  try {
    const running = await startServices({ config, modules, logger, redactor });
    logger.info(
      { port: running.port, host: config.server.host, services: modules.map((module) => module.fullName), prometheus: telemetry.prometheusUrl },
      'loom listening',
    );
    const signal = await stopSignal;
    logger.info({ signal, deadlineMs: config.server.shutdown.deadlineMs }, 'shutting down');
    await running.stop();
    logger.info('stopped');
  } finally {
    await telemetry.shutdown();
  }
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
