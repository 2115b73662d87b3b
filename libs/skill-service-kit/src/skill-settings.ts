import { availableParallelism } from 'node:os';
import { z } from 'zod';
import { type FetchLimits } from './safe-fetch.js';
import { SkillSettingsError } from './errors.js';
import { type SkillLimits } from './skill-server.js';

/** Settings of a skill process, read from the environment (Spring-style names: `server.port` is `SERVER_PORT`). */
export interface SkillSettings {
  readonly host: string;
  /** Absent: the module's default port. */
  readonly port?: number;
  readonly limits: SkillLimits;
  /** Worker threads each skill runs its work on (annotation, keywords, PDF); default: the cores this process may use. */
  readonly workers: number;
  readonly shutdownDeadlineMs: number;
  /** Directory of skill data (dictionary files, stored pipelines); `/data` in the containers. */
  readonly dataDirectory: string;
  /** Host names and address ranges a skill may fetch from although they are private (local use, tests). */
  readonly fetchAllowHosts: readonly string[];
  readonly fetchLimits: FetchLimits;
  readonly logLevel: string;
  readonly otlpEndpoint?: string;
}

/** Each setting: its environment variable and default. */
export const SKILL_SETTING_VARIABLES = {
  host: 'SERVER_HOST',
  port: 'SERVER_PORT',
  bodyLimitBytes: 'SKILL_LIMITS_BODYBYTES',
  concurrency: 'SKILL_LIMITS_CONCURRENCY',
  timeLimitMs: 'SKILL_LIMITS_TIMEMS',
  retryAfterSeconds: 'SKILL_LIMITS_RETRYAFTERSECONDS',
  workers: 'SKILL_WORKERS',
  shutdownDeadlineMs: 'SKILL_SHUTDOWN_DEADLINEMS',
  dataDirectory: 'SKILL_DATA_DIRECTORY',
  fetchAllowHosts: 'SKILL_FETCH_ALLOWHOSTS',
  fetchMaxBytes: 'SKILL_FETCH_MAXBYTES',
  fetchTimeoutMs: 'SKILL_FETCH_TIMEMS',
  fetchMaxRedirects: 'SKILL_FETCH_MAXREDIRECTS',
  logLevel: 'LOG_LEVEL',
  otlpEndpoint: 'OTEL_EXPORTER_OTLP_ENDPOINT',
} as const;

/** Defaults a serious deployment starts from; every one can be set. */
export const DEFAULT_SKILL_SETTINGS: SkillSettings = {
  host: '127.0.0.1',
  limits: { bodyLimitBytes: 16 * 1024 * 1024, concurrency: 64, timeLimitMs: 60_000, retryAfterSeconds: 1 },
  workers: availableParallelism(),
  shutdownDeadlineMs: 10_000,
  dataDirectory: './.loom/skills',
  fetchAllowHosts: [],
  fetchLimits: { maxRedirects: 5, maxBytes: 10 * 1024 * 1024, timeoutMs: 15_000 },
  logLevel: 'info',
};

const integer = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

/** Reads the settings from environment variables over the defaults; a bad value throws SkillSettingsError naming the variable. */
export function skillSettingsFromEnv(env: NodeJS.ProcessEnv, defaults: SkillSettings = DEFAULT_SKILL_SETTINGS): SkillSettings {
  const read = <T>(name: string, schema: z.ZodType<T>, fallback: T): T => {
    const raw = env[name];
    if (raw === undefined || raw.trim() === '') return fallback;
    const parsed = schema.safeParse(raw.trim());
    if (!parsed.success) throw new SkillSettingsError(name, `${parsed.error.issues[0]?.message ?? 'invalid'} (got '${raw}')`);
    return parsed.data;
  };
  const v = SKILL_SETTING_VARIABLES;
  const port = read<number | undefined>(v.port, integer(0, 65535), defaults.port);
  const otlpEndpoint = read<string | undefined>(v.otlpEndpoint, z.url(), defaults.otlpEndpoint);
  return {
    host: read(v.host, z.string().min(1), defaults.host),
    ...(port === undefined ? {} : { port }),
    limits: {
      bodyLimitBytes: read(v.bodyLimitBytes, integer(1024, 1024 ** 3), defaults.limits.bodyLimitBytes),
      concurrency: read(v.concurrency, integer(1, 10_000), defaults.limits.concurrency),
      timeLimitMs: read(v.timeLimitMs, integer(100, 3_600_000), defaults.limits.timeLimitMs),
      retryAfterSeconds: read(v.retryAfterSeconds, integer(1, 3600), defaults.limits.retryAfterSeconds),
    },
    workers: read(v.workers, integer(1, 256), defaults.workers),
    shutdownDeadlineMs: read(v.shutdownDeadlineMs, integer(0, 600_000), defaults.shutdownDeadlineMs),
    dataDirectory: read(v.dataDirectory, z.string().min(1), defaults.dataDirectory),
    fetchAllowHosts: read(
      v.fetchAllowHosts,
      z.string().transform((text) =>
        text
          .split(',')
          .map((entry) => entry.trim())
          .filter((entry) => entry !== ''),
      ),
      defaults.fetchAllowHosts,
    ),
    fetchLimits: {
      maxBytes: read(v.fetchMaxBytes, integer(1024, 1024 ** 3), defaults.fetchLimits.maxBytes),
      timeoutMs: read(v.fetchTimeoutMs, integer(100, 600_000), defaults.fetchLimits.timeoutMs),
      maxRedirects: read(v.fetchMaxRedirects, integer(0, 20), defaults.fetchLimits.maxRedirects),
    },
    logLevel: read(v.logLevel, z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']), defaults.logLevel),
    ...(otlpEndpoint === undefined ? {} : { otlpEndpoint }),
  };
}
