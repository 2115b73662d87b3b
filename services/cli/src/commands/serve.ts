import { type Command } from 'commander';
import type { LoomConfig } from '@loom/config';
import type { RunningSkills } from '@loom/skill-service-kit';
import { cliIo } from '../cli-io.js';

/** What `loom serve` runs, as its command line gives it. */
export interface ServeOptions {
  /** `--services a,b`: the services to run; all six when absent. */
  readonly services?: string;
  readonly config?: string;
  /** `--set key=value` overrides, in order. */
  readonly set: readonly string[];
  /** `--with-skills [list]`: loom's skill services beside it; true for all. */
  readonly withSkills?: string | true;
  /** `--skill-port skill=port`. */
  readonly skillPort: readonly string[];
}

/** Where a `loom serve` composition gets its environment and puts its log. */
export interface ServeEnvironment {
  readonly env: NodeJS.ProcessEnv;
  /** JSON log lines of loom and its skills; standard output when absent. */
  readonly logDestination?: NodeJS.WritableStream;
  /** Register the process's OpenTelemetry providers globally: the binary does, a composition inside a test does not. */
  readonly registerTelemetry: boolean;
}

/** A `loom serve` composition running in this process. */
export interface RunningLoom {
  /** The gRPC port loom listens on. */
  readonly port: number;
  /** The skill services running beside loom (`--with-skills`), if any. */
  readonly skills?: RunningSkills;
  /** The web console, when `loom.console.port` is set: the address a browser opens. */
  readonly console?: { readonly url: string; readonly port: number };
  /** Stops loom and its skills, draining in-flight work; logs why (`reason`, e.g. the signal) first. Idempotent. */
  stop(reason?: Readonly<Record<string, unknown>>): Promise<void>;
}

/**
 * Starts what `loom serve` runs, as its options say, and resolves once everything listens. The skills (`--with-skills`)
 * listen first, so that loom's skill gateway registers them where they really are. Installs no signal handler:
 * the caller stops it. Refuses a bad option or configuration before anything starts.
 */
export async function startServe(options: ServeOptions, environment: ServeEnvironment): Promise<RunningLoom> {
  const { consoleOnly, services } = consoleSelection(options.services);
  if (consoleOnly) return startConsoleAlone(options, environment);
  const loom = await startServices({ ...options, ...(services === undefined ? {} : { services }) }, environment);
  return withConsole(loom, options, environment);
}

/** `--services` with `console` taken out: the console is not a gRPC service, and `--services console` runs it alone. */
function consoleSelection(list: string | undefined): { consoleOnly: boolean; services: string | undefined } {
  if (list === undefined) return { consoleOnly: false, services: undefined };
  const names = list.split(',').map((name) => name.trim());
  if (!names.includes('console')) return { consoleOnly: false, services: list };
  const others = names.filter((name) => name !== 'console' && name !== '');
  return { consoleOnly: others.length === 0, services: others.join(',') };
}

/** The configuration sources of a serve composition. */
function configSource(options: ServeOptions, environment: ServeEnvironment) {
  return {
    ...(options.config === undefined ? {} : { configFile: options.config }),
    overrides: options.set,
    env: environment.env,
    registerTelemetry: environment.registerTelemetry,
    ...(environment.logDestination === undefined ? {} : { logDestination: environment.logDestination }),
  };
}

/** Starts the web console beside the running services when `loom.console.port` is set; stops them if it cannot start. */
async function withConsole(loom: RunningLoom, options: ServeOptions, environment: ServeEnvironment): Promise<RunningLoom> {
  const { loadConfig } = await import('@loom/config');
  const config = loadConfig(configSource(options, environment));
  if (config.console.port === undefined) return loom;
  let running;
  try {
    running = await startConsoleFor(config, environment, () => `${grpcHost(config.server.host)}:${loom.port}`);
  } catch (error) {
    await loom.stop({ reason: 'the console did not start' });
    throw error;
  }
  let stopping: Promise<void> | undefined;
  return {
    port: loom.port,
    ...(loom.skills === undefined ? {} : { skills: loom.skills }),
    console: { url: running.url, port: running.port },
    stop(reason = {}) {
      // the console first: its event streams end before the services they read from drain
      stopping ??= running.stop().then(() => loom.stop(reason));
      return stopping;
    },
  };
}

/** `loom serve --services console`: the console alone, calling the services at their `loom.services.<name>.address`. */
async function startConsoleAlone(options: ServeOptions, environment: ServeEnvironment): Promise<RunningLoom> {
  const [{ loadConfig }, { UsageError }] = await Promise.all([import('@loom/config'), import('../usage-error.js')]);
  const config = loadConfig(configSource(options, environment));
  if (config.console.port === undefined)
    throw new UsageError('--services console: set loom.console.port (LOOM_CONSOLE_PORT) to the port the console listens on');
  const running = await startConsoleFor(config, environment, () => `${grpcHost(config.server.host)}:${config.server.port}`);
  return { port: 0, console: { url: running.url, port: running.port }, stop: () => running.stop() };
}

async function startConsoleFor(
  config: LoomConfig,
  environment: ServeEnvironment,
  grpcAddress: () => string,
): Promise<{ url: string; port: number; stop(): Promise<void> }> {
  const [{ startConsole }, { createLogger, redactor }] = await Promise.all([import('@loom/console'), import('@loom/telemetry')]);
  const logger = createLogger({
    level: config.log.level,
    redactor,
    base: { service: 'loom-console', pid: process.pid },
    ...(environment.logDestination === undefined ? {} : { destination: environment.logDestination }),
  });
  return startConsole({ config, logger, grpcAddress });
}

/** The host the console calls loom's gRPC port on: loopback for a wildcard bind. */
function grpcHost(host: string): string {
  return host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
}

/** The gRPC services (and with --with-skills the skills) of a serve composition. */
async function startServices(options: ServeOptions, environment: ServeEnvironment): Promise<RunningLoom> {
  const [{ selectModules }, { startServeProcess }] = await Promise.all([import('../modules.js'), import('@loom/service-kit')]);
  const source = configSource(options, environment);
  const modules = selectModules(options.services);
  if (options.withSkills === undefined) return startServeProcess(modules, source);

  const [{ besideLoomSettings, parsePorts, selectSkills, startSkillModules, skillRegistrationOverrides }, { loadConfig }, { createLogger }] = await Promise.all(
    [import('./skills.js'), import('@loom/config'), import('@loom/telemetry')],
  );
  // everything that can be refused is checked before anything starts
  const skills = selectSkills(options.withSkills === true ? undefined : options.withSkills);
  const ports = parsePorts(options.skillPort);
  const config = loadConfig(source);
  const settings = besideLoomSettings(config.data.skillsDirectory, environment.env);
  const logger = createLogger({
    level: settings.logLevel,
    base: { service: 'loom-skills', pid: process.pid },
    ...(environment.logDestination === undefined ? {} : { destination: environment.logDestination }),
  });
  // the skills use loom's tracer: the process's telemetry is loom's
  const running = await startSkillModules(skills, {
    settings,
    logger,
    portOf: (module) => ports.get(module.name) ?? module.hostPort,
    portSettingOf: (module) => `--skill-port ${module.name}`,
  });
  const overrides = skillRegistrationOverrides(skills, running, settings.host, (name) => config.skills.register[name] !== undefined);
  let loom;
  try {
    // the skill gateway calls these skills in memory, without their sockets (loom.skills.inProcess)
    loom = await startServeProcess(modules, { ...source, overrides: [...overrides, ...source.overrides], localHttp: running.local });
  } catch (error) {
    await running.stop();
    throw error;
  }
  let stopping: Promise<void> | undefined;
  const stop = async (reason: Readonly<Record<string, unknown>>): Promise<void> => {
    logger.info(reason, 'shutting down');
    await Promise.all([loom.stop(reason), running.stop()]);
  };
  return {
    port: loom.port,
    skills: running,
    stop(reason = {}) {
      stopping ??= stop(reason);
      return stopping;
    },
  };
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** Serves what the options say until SIGTERM or SIGINT, then drains and stops: the binary's `loom serve`. */
async function serveUntilSignal(options: ServeOptions): Promise<void> {
  const { shutdownSignal } = await import('@loom/foundation');
  // listening before the start, so that a signal during it still ends in a graceful stop
  const stopSignal = shutdownSignal();
  const loom = await startServe(options, { env: cliIo().env, registerTelemetry: true });
  if (loom.console !== undefined) cliIo().stderr.write(`loom console: ${loom.console.url}\n`);
  const signal = await stopSignal;
  await loom.stop({ signal });
}

/**
 * `loom serve`: loom's services (and with --with-skills its skills) in this process until SIGTERM or SIGINT. `serve`
 * is what its action does with the options (a test composes them in its own process instead).
 */
export function addServeCommand(program: Command, serve: (options: ServeOptions) => Promise<void> = serveUntilSignal): void {
  program
    .command('serve')
    .description('run loom services in this process (all six by default)')
    .option(
      '--services <list>',
      'comma-separated services to run: config-store,scheduler,executor,secrets,skill-gateway,audit; console (alone: the web console of loom.console.port)',
    )
    .option('--config <file>', 'configuration file (.yaml, .yml or .properties)')
    .option('--set <key=value>', 'override a configuration key (repeatable)', collect, [])
    .option('--with-skills [list]', "also run loom's skill services in this process (all, or a comma-separated list), on their published ports")
    .option('--skill-port <skill=port>', 'with --with-skills: port of one skill (repeatable; 0 picks a free one)', collect, [])
    .action((options: ServeOptions) => serve(options));
}
