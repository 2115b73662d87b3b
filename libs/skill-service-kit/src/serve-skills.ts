import { ListenError, type LocalHttpServers, shutdownSignal } from '@loom/foundation';
import { createLogger, type Logger, startTelemetry } from '@loom/telemetry';
import { type Tracer } from '@opentelemetry/api';
import { SkillSettingsError } from './errors.js';
import { type SkillModule } from './skill-module.js';
import { SkillServer } from './skill-server.js';
import { SKILL_SETTING_VARIABLES, type SkillSettings, skillSettingsFromEnv } from './skill-settings.js';

/** What `serveSkills` runs and how. */
export interface ServeSkillsOptions {
  readonly settings: SkillSettings;
  readonly logger: Logger;
  /** The port of each module; undefined: `settings.port` (SERVER_PORT) when it serves one module alone, else the module's host port. */
  readonly portOf?: (module: SkillModule) => number | undefined;
  /** The setting that chose a module's port, named when it cannot listen there; default SERVER_PORT. */
  readonly portSettingOf?: (module: SkillModule) => string;
  readonly tracer?: Tracer;
}

/** Skill services running in this process. */
export interface RunningSkills {
  /** By skill name. */
  readonly servers: ReadonlyMap<string, SkillServer>;
  /** The server of each origin the skills listen at (their `url`): a caller of this process may post to it in memory. */
  readonly local: LocalHttpServers;
  /** Stops every server (in parallel, each with its own deadline). Idempotent. */
  stop(): Promise<void>;
}

/** Builds and starts each module's server; if one cannot start, the ones started are stopped and the error thrown. */
export async function serveSkills(modules: readonly SkillModule[], options: ServeSkillsOptions): Promise<RunningSkills> {
  const { settings, logger } = options;
  const servers = new Map<string, SkillServer>();
  const stopAll = async (): Promise<void> => {
    await Promise.all([...servers.values()].map((server) => server.stop()));
  };
  try {
    for (const module of modules) {
      const moduleLogger = logger.child({ skill: module.name });
      const definition = await module.create({ settings, logger: moduleLogger });
      const port = options.portOf?.(module) ?? (modules.length === 1 ? settings.port : undefined) ?? module.hostPort;
      const server = new SkillServer(definition, {
        host: settings.host,
        port,
        limits: settings.limits,
        shutdownDeadlineMs: settings.shutdownDeadlineMs,
        logger: moduleLogger,
        ...(options.tracer === undefined ? {} : { tracer: options.tracer }),
      });
      // a server that fails to start has released what it held, and is not stopped again with the others
      await server.start().catch((error: unknown) => {
        if (!isListenFailure(error)) throw error;
        const portSetting = options.portSettingOf?.(module) ?? SKILL_SETTING_VARIABLES.port;
        throw new ListenError({ host: settings.host, port, portSetting, hostSetting: SKILL_SETTING_VARIABLES.host }, error);
      });
      servers.set(module.name, server);
    }
  } catch (error) {
    await stopAll();
    throw error;
  }
  let stopping: Promise<void> | undefined;
  const byOrigin = new Map([...servers.values()].map((server) => [new URL(server.url).origin, server]));
  return {
    servers,
    local: (origin) => byOrigin.get(origin),
    stop() {
      stopping ??= stopAll();
      return stopping;
    },
  };
}

/** True for an error of the operating system's listen (`listen EADDRINUSE: …`, with its code). */
function isListenFailure(error: unknown): boolean {
  return error instanceof Error && (error as NodeJS.ErrnoException).syscall === 'listen';
}

/**
 * Runs skill modules in this process until SIGTERM or SIGINT, with settings from the
 * environment, JSON logs and OpenTelemetry (OTLP when `OTEL_EXPORTER_OTLP_ENDPOINT` is set).
 */
export async function runSkills(modules: readonly SkillModule[], options: RunSkillsOptions = {}): Promise<void> {
  const settings = options.settings ?? skillSettingsFromEnv(options.env ?? process.env);
  const serviceName = modules.length === 1 ? `loom-skill-${modules[0]!.name}` : 'loom-skills';
  const logger = createLogger({ level: settings.logLevel, base: { service: serviceName, pid: process.pid } });
  // beside `loom serve` the process's telemetry is already started: the skills use its global tracer
  const telemetry =
    options.startTelemetry === false
      ? undefined
      : startTelemetry({ serviceName, ...(settings.otlpEndpoint === undefined ? {} : { otlpEndpoint: settings.otlpEndpoint }) });
  try {
    const running = await serveSkills(modules, {
      settings,
      logger,
      ...(telemetry === undefined ? {} : { tracer: telemetry.tracer }),
      ...(options.portOf === undefined ? {} : { portOf: options.portOf }),
      ...(options.portSettingOf === undefined ? {} : { portSettingOf: options.portSettingOf }),
    });
    options.onListening?.(running);
    const signal = await shutdownSignal();
    logger.info({ signal }, 'shutting down');
    await running.stop();
  } finally {
    await telemetry?.shutdown();
  }
}

/** How `runSkills` runs. */
export interface RunSkillsOptions {
  /** Where settings come from when `settings` is absent; `process.env` by default. */
  readonly env?: NodeJS.ProcessEnv;
  readonly settings?: SkillSettings;
  readonly portOf?: (module: SkillModule) => number | undefined;
  /** The setting that chose a module's port (ServeSkillsOptions.portSettingOf). */
  readonly portSettingOf?: (module: SkillModule) => string;
  /** Start this process's telemetry (default true); false when another part of the process has. */
  readonly startTelemetry?: boolean;
  /** Called once every server listens, with the skills running. */
  readonly onListening?: (running: RunningSkills) => void;
}

/** `main` of one skill's own process: port from SERVER_PORT, else the module's default port. */
export async function runSkillMain(module: SkillModule): Promise<void> {
  try {
    const settings = skillSettingsFromEnv(process.env);
    await runSkills([module], { settings, portOf: () => settings.port ?? module.defaultPort });
    process.exit(0);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`loom-skill-${module.name}: ${error instanceof SkillSettingsError ? 'invalid setting' : 'failed'}: ${message}\n`);
    process.exit(error instanceof SkillSettingsError ? 2 : 1);
  }
}
