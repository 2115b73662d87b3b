import { ConfigError } from './config-error.js';
import {
  authRolesSpec,
  authTokensSpec,
  fixedKeys,
  type KeySpec,
  type LogLevel,
  type LoomRole,
  type MapKeySpec,
  secretKeysSpec,
  serviceAddressKey,
  serviceAddressSpec,
  type ServiceName,
  serviceNames,
  skillConcurrencySpec,
  skillRegistrationsSpec,
  skillTimeoutsSpec,
  type UpdatePolicy,
  updateWorkflowsSpec,
  type ValueSpec,
} from './config-keys.js';
import { type Layer, parseOverrides, type RawValue, readConfigFile, readEnvironment } from './config-sources.js';

/** Where loadConfig reads configuration from. */
export interface LoadConfigOptions {
  /** A `.yaml`, `.yml` or `.properties` file (`--config`). */
  configFile?: string;
  /** The environment; `process.env` when absent. */
  env?: NodeJS.ProcessEnv;
  /** `key=value` overrides (`--set`), highest precedence. */
  overrides?: readonly string[];
}

/** Where one service is reached; no address means this process. */
export interface ServiceEndpoint {
  readonly address?: string;
}

/** The TLS files of this process. */
export interface TlsConfig {
  readonly certFile: string;
  readonly keyFile: string;
  readonly caFile: string;
}

/** loom's validated configuration. */
export interface LoomConfig {
  readonly server: {
    readonly port: number;
    readonly host: string;
    readonly shutdown: { readonly deadlineMs: number };
  };
  /** `loom.data.directory`: where loom's own state lives unless a key puts a part elsewhere. */
  readonly data: {
    readonly directory: string;
    /** `<loom.data.directory>/skills`: data of the skills (models, lexicons) kept with the rest of the state. */
    readonly skillsDirectory: string;
  };
  readonly datasource: { readonly filesystemRoot: string };
  readonly startup: { readonly workflowsDirectory: string };
  readonly security: {
    readonly audit: { readonly enabled: boolean; readonly logPath: string; readonly maxFileBytes: number };
    readonly serverPolicy: { readonly enabled: boolean };
  };
  readonly experimental: { readonly enabled: boolean };
  /** Limits of script components. */
  readonly scripts: { readonly timeLimitMs: number; readonly javascriptMemoryLimitMb: number; readonly pythonMemoryLimitMb: number };
  /** How the executor runs workflows. */
  readonly executor: { readonly queueCapacity: number };
  readonly secrets: {
    /** Absent: the embedded PGlite database. */
    readonly databaseUrl?: string;
    /** Key id to base64 text of a 32-byte key. */
    readonly keys: Readonly<Record<string, string>>;
    readonly activeKeyId?: string;
    /** Where generated keys are kept. */
    readonly keyRingFile: string;
    /** Whether loom may generate keys itself (development); false: every key is configured. */
    readonly generateKeys: boolean;
  };
  readonly embedded: {
    readonly postgres: { readonly dataDir: string; readonly port: number };
    /** PGlite with Apache AGE, for AGE resources whose host is `embedded`. */
    readonly graph: { readonly dataDir: string; readonly port: number };
  };
  readonly services: Readonly<Record<ServiceName, ServiceEndpoint>>;
  readonly auth: {
    /** Identity to bearer token. */
    readonly tokens: Readonly<Record<string, string>>;
    /** Identity of a static token to its roles. */
    readonly roles: Readonly<Record<string, readonly LoomRole[]>>;
    readonly allowAnonymous: boolean;
    readonly anonymousRoles: readonly LoomRole[];
    /** Sign-in with the identity provider: its installation configuration file and the prefix of loom roles. */
    readonly oidc?: { readonly configFile: string; readonly rolePrefix: string };
  };
  /** Graph queries under the caller's own identity; absent when not configured. */
  readonly graphSso?: GraphSsoConfig;
  readonly tls?: TlsConfig;
  readonly telemetry: {
    readonly serviceName: string;
    readonly otlpEndpoint?: string;
    readonly prometheusPort: number;
    readonly samplingRatio: number;
    readonly messageSamplingRatio: number;
  };
  /** The scheduler: where its state lives, its lease, restarts, catch-up and new versions. */
  readonly scheduler: {
    /** Absent: one scheduler with its state in `stateFile`. */
    readonly databaseUrl?: string;
    readonly stateFile: string;
    readonly lease: { readonly pollMs: number; readonly timeoutMs: number };
    readonly restart: { readonly initialDelayMs: number; readonly maxDelayMs: number };
    readonly catchUp: { readonly maxFires: number };
    /** What a new version of a running workflow does: the default, and per workflow name or stored name. */
    readonly update: { readonly default: UpdatePolicy; readonly workflows: Readonly<Record<string, UpdatePolicy>> };
  };
  readonly log: { readonly level: LogLevel };
  /** Files this configuration was read from (loom's state: scripts never read them). */
  readonly sources: {
    /** The `--config` file. */
    readonly configFile?: string;
    /** Every file named by a `<VAR>_FILE` environment variable, loom's keys or not. */
    readonly valueFiles: readonly { readonly variable: string; readonly path: string }[];
  };
  /** The skill gateway: its registry and how it calls skills. */
  readonly skills: {
    /** Absent: the embedded PostgreSQL. */
    readonly databaseUrl?: string;
    readonly timeoutMs: number;
    /** Per skill name. */
    readonly timeouts: Readonly<Record<string, number>>;
    readonly maxConcurrency: number;
    readonly keywordExtractionMaxConcurrency: number;
    /** Per skill name. */
    readonly concurrency: Readonly<Record<string, number>>;
    readonly retries: number;
    readonly backoff: { readonly initialMs: number; readonly maxMs: number };
    readonly breaker: { readonly failureThreshold: number; readonly openMs: number };
    readonly registryCacheMs: number;
    /** `loom.skills.register.<name>`: skill name → its registration fields (JSON), registered at the gateway's start. */
    readonly registrations: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  };
}

/** The configuration with the source of every value, e.g. `server.port` -> `environment variable SERVER_PORT`. */
export interface ResolvedConfig {
  readonly config: LoomConfig;
  /** Key to source: `default`, `config file <path>`, `environment variable <NAME>` or `--set`. */
  readonly origins: ReadonlyMap<string, string>;
}

const DEFAULT_SOURCE = 'default';
const OTEL_ENDPOINT_VARIABLE = 'OTEL_EXPORTER_OTLP_ENDPOINT';

/**
 * Loads and validates the configuration: defaults < config file < environment < overrides.
 * Throws ConfigError, naming the key and the source, for the first bad value.
 */
export function loadConfig(options: LoadConfigOptions = {}): LoomConfig {
  return resolveConfig(options).config;
}

/** Like loadConfig, and also tells where each value came from. */
export function resolveConfig(options: LoadConfigOptions = {}): ResolvedConfig {
  const env = options.env ?? process.env;
  const file: Layer = options.configFile === undefined ? new Map<string, RawValue>() : readConfigFile(options.configFile);
  const overrides = parseOverrides(options.overrides ?? []);
  const environment = readEnvironment(env, (map) => [...entryNames(file, map), ...entryNames(overrides, map)]);
  const values = new Values(new Map([...file, ...environment, ...overrides]));

  const dataDirectory = values.get(fixedKeys['loom.data.directory']);
  /** A state path: its own key when set, else its place inside loom.data.directory. */
  const statePath = (key: StatePathKey, name: string): string => values.get(fixedKeys[key]) ?? values.derive(key, inside(dataDirectory, name));
  const filesystemRoot = statePath('loom.datasource.filesystemRoot', 'workflows');
  const keys = values.map(secretKeysSpec);
  const config: LoomConfig = {
    server: {
      port: values.get(fixedKeys['server.port']),
      host: values.get(fixedKeys['server.host']),
      shutdown: { deadlineMs: values.get(fixedKeys['server.shutdown.deadlineMs']) },
    },
    data: { directory: dataDirectory, skillsDirectory: inside(dataDirectory, 'skills') },
    datasource: { filesystemRoot },
    startup: {
      workflowsDirectory: values.get(fixedKeys['loom.startup.workflows.directory']) ?? values.derive('loom.startup.workflows.directory', filesystemRoot),
    },
    security: {
      audit: {
        enabled: values.get(fixedKeys['loom.security.audit.enabled']),
        logPath: statePath('loom.security.audit.log.path', 'audit.log'),
        maxFileBytes: values.get(fixedKeys['loom.security.audit.log.maxBytes']),
      },
      serverPolicy: { enabled: values.get(fixedKeys['loom.security.serverPolicy.enabled']) },
    },
    experimental: { enabled: values.get(fixedKeys['loom.experimental.enabled']) },
    scripts: {
      timeLimitMs: values.get(fixedKeys['loom.scripts.timeLimitMs']),
      javascriptMemoryLimitMb: values.get(fixedKeys['loom.scripts.javascript.memoryLimitMb']),
      pythonMemoryLimitMb: values.get(fixedKeys['loom.scripts.python.memoryLimitMb']),
    },
    executor: { queueCapacity: values.get(fixedKeys['loom.executor.queueCapacity']) },
    secrets: {
      ...definedOnly({ databaseUrl: values.get(fixedKeys['loom.secrets.database.url']) }),
      keys,
      ...definedOnly({ activeKeyId: activeKeyId(values, keys) }),
      keyRingFile: statePath('loom.secrets.keyRingFile', 'keyring.json'),
      generateKeys: values.get(fixedKeys['loom.secrets.generateKeys']),
    },
    embedded: {
      postgres: {
        dataDir: statePath('loom.embedded.postgres.dataDir', 'pgdata'),
        port: values.get(fixedKeys['loom.embedded.postgres.port']),
      },
      graph: {
        dataDir: statePath('loom.embedded.graph.dataDir', 'graphdata'),
        port: values.get(fixedKeys['loom.embedded.graph.port']),
      },
    },
    services: serviceEndpoints(values),
    auth: {
      tokens: values.map(authTokensSpec),
      roles: Object.fromEntries(Object.entries(values.map(authRolesSpec)).map(([identity, list]) => [identity, roleList(list)])),
      allowAnonymous: values.get(fixedKeys['loom.auth.allowAnonymous']),
      anonymousRoles: roleList(values.get(fixedKeys['loom.auth.anonymousRoles'])),
      ...definedOnly({ oidc: oidcSignIn(values) }),
    },
    ...definedOnly({ graphSso: graphSso(values) }),
    ...definedOnly({ tls: tlsFiles(values) }),
    telemetry: {
      serviceName: values.get(fixedKeys['loom.telemetry.serviceName']),
      ...definedOnly({ otlpEndpoint: otlpEndpoint(values, env) }),
      prometheusPort: values.get(fixedKeys['loom.telemetry.prometheus.port']),
      samplingRatio: values.get(fixedKeys['loom.telemetry.sampling.ratio']),
      messageSamplingRatio: values.get(fixedKeys['loom.telemetry.messages.sampling.ratio']),
    },
    scheduler: {
      ...definedOnly({ databaseUrl: values.get(fixedKeys['loom.scheduler.database.url']) }),
      stateFile: statePath('loom.scheduler.stateFile', 'scheduler-state.json'),
      lease: leaseTimes(values),
      restart: restartDelays(values),
      catchUp: { maxFires: values.get(fixedKeys['loom.scheduler.catchUp.maxFires']) },
      update: {
        default: values.get(fixedKeys['loom.scheduler.update.default']),
        // validated against updatePolicies by the spec's schema
        workflows: values.map(updateWorkflowsSpec) as Record<string, UpdatePolicy>,
      },
    },
    log: { level: values.get(fixedKeys['loom.log.level']) },
    sources: {
      ...definedOnly({ configFile: options.configFile }),
      valueFiles: Object.entries(env)
        .filter((entry): entry is [string, string] => entry[0].endsWith('_FILE') && typeof entry[1] === 'string' && entry[1] !== '')
        .map(([variable, path]) => ({ variable, path })),
    },
    skills: skillSettings(values),
  };
  return { config, origins: values.origins };
}

/** Where and how single sign-on graph queries run. */
export interface GraphSsoConfig {
  readonly providerConfigFile: string;
  readonly uri: string;
  readonly mode: 'impersonate' | 'bearer';
  readonly user?: string;
  readonly password?: string;
  readonly database?: string;
}

/** `editor, operator` -> ['editor', 'operator'] (validated by the key's schema). */
function roleList(list: string): LoomRole[] {
  return [...new Set(list.split(',').map((role) => role.trim() as LoomRole))];
}

function oidcSignIn(values: Values): { configFile: string; rolePrefix: string } | undefined {
  const configFile = values.get(fixedKeys['loom.auth.oidc.configFile']);
  return configFile === undefined ? undefined : { configFile, rolePrefix: values.get(fixedKeys['loom.auth.oidc.rolePrefix']) };
}

function graphSso(values: Values): GraphSsoConfig | undefined {
  const providerConfigFile = values.get(fixedKeys['loom.graph.sso.providerConfigFile']);
  const uri = values.get(fixedKeys['loom.graph.sso.uri']);
  if (providerConfigFile === undefined && uri === undefined) return undefined;
  if (providerConfigFile === undefined || uri === undefined) {
    const missing = providerConfigFile === undefined ? 'loom.graph.sso.providerConfigFile' : 'loom.graph.sso.uri';
    throw new ConfigError(`${missing} is required when the other loom.graph.sso keys are set`, { key: missing });
  }
  const mode = values.get(fixedKeys['loom.graph.sso.mode']);
  const user = values.get(fixedKeys['loom.graph.sso.user']);
  const password = values.get(fixedKeys['loom.graph.sso.password']);
  if (mode === 'impersonate' && (user === undefined || password === undefined)) {
    const missing = user === undefined ? 'loom.graph.sso.user' : 'loom.graph.sso.password';
    throw new ConfigError(`${missing} is required with loom.graph.sso.mode impersonate (the account that impersonates users)`, { key: missing });
  }
  return { providerConfigFile, uri, mode, ...definedOnly({ user, password, database: values.get(fixedKeys['loom.graph.sso.database']) }) };
}

/** The keys whose default is a place inside loom.data.directory. */
type StatePathKey =
  | 'loom.datasource.filesystemRoot'
  | 'loom.security.audit.log.path'
  | 'loom.secrets.keyRingFile'
  | 'loom.embedded.postgres.dataDir'
  | 'loom.embedded.graph.dataDir'
  | 'loom.scheduler.stateFile';

/** `name` inside `directory`, written as the directory is (`./.loom` + `audit.log` -> `./.loom/audit.log`). */
function inside(directory: string, name: string): string {
  return `${directory.replace(/\/+$/, '')}/${name}`;
}

/** The merged raw values, validated key by key as they are read, recording where each came from. */
class Values {
  readonly origins = new Map<string, string>();

  constructor(private readonly raw: Layer) {}

  /** The validated value of a key, or its default. */
  get<T>(spec: KeySpec<T>): T {
    const raw = this.raw.get(spec.key);
    if (raw === undefined) {
      if (spec.default !== undefined) this.origins.set(spec.key, DEFAULT_SOURCE);
      return spec.default;
    }
    return this.validate(spec, spec.key, raw);
  }

  /** The validated value of a key under another name (one service's address), undefined when unset. */
  getAs<T>(spec: ValueSpec<T>, key: string): T | undefined {
    const raw = this.raw.get(key);
    return raw === undefined ? undefined : this.validate(spec, key, raw);
  }

  /** The validated entries of a map-valued key family. */
  map(spec: MapKeySpec): Record<string, string> {
    const entries = [...this.raw].filter(([key]) => key.startsWith(spec.prefix));
    return Object.fromEntries(entries.map(([key, raw]) => [key.slice(spec.prefix.length), this.validate(spec, key, raw)]));
  }

  /** Records a value that follows another key when its own is unset. */
  derive<T>(key: string, value: T): T {
    this.origins.set(key, DEFAULT_SOURCE);
    return value;
  }

  /** Validates a value from a source that is not a configuration key, such as an OTEL_* variable. */
  validate<T>(spec: ValueSpec<T>, key: string, raw: RawValue): T {
    const result = spec.schema.safeParse(raw.value);
    if (!result.success) throw invalid(spec, key, raw);
    if (result.data !== undefined) this.origins.set(key, raw.source);
    return result.data;
  }

  /** The source of a key that was set, for error messages. */
  sourceOf(key: string): string | undefined {
    return this.raw.get(key)?.source;
  }
}

function invalid(spec: ValueSpec<unknown>, key: string, raw: RawValue): ConfigError {
  const secret = spec.secret === true;
  let message = `${key}: expected ${spec.expected}, got ${describe(raw.value, secret)} (from ${raw.source})`;
  const scalar = typeof raw.value === 'number' || typeof raw.value === 'boolean';
  if (scalar && spec.schema.safeParse(String(raw.value)).success) message += '; quote the value to make it text';
  return new ConfigError(message, { key, source: raw.source });
}

/** How a bad value is shown in an error; a secret only by its kind and length. */
function describe(value: unknown, secret: boolean): string {
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object' && value !== null) return 'a map';
  if (typeof value === 'string') {
    if (secret) return `a value of ${value.length} characters (not shown)`;
    return JSON.stringify(value.length > 120 ? `${value.slice(0, 120)}…` : value);
  }
  return secret ? `a ${typeof value} (not shown)` : String(value);
}

function activeKeyId(values: Values, keys: Record<string, string>): string | undefined {
  const spec = fixedKeys['loom.secrets.activeKeyId'];
  const id = values.get(spec);
  if (id === undefined || Object.hasOwn(keys, id)) return id;
  const source = values.sourceOf(spec.key) ?? DEFAULT_SOURCE;
  const ids = Object.keys(keys);
  const expected = ids.length === 0 ? 'the id of a key in loom.secrets.keys, but none is configured' : `one of the loom.secrets.keys ids (${ids.join(', ')})`;
  throw new ConfigError(`${spec.key}: expected ${expected}, got ${JSON.stringify(id)} (from ${source})`, { key: spec.key, source });
}

function serviceEndpoints(values: Values): Record<ServiceName, ServiceEndpoint> {
  const endpoints = {} as Record<ServiceName, ServiceEndpoint>;
  for (const service of serviceNames) {
    endpoints[service] = definedOnly({ address: values.getAs(serviceAddressSpec, serviceAddressKey(service)) });
  }
  return endpoints;
}

function tlsFiles(values: Values): TlsConfig | undefined {
  const certFile = values.get(fixedKeys['loom.tls.certFile']);
  const keyFile = values.get(fixedKeys['loom.tls.keyFile']);
  const caFile = values.get(fixedKeys['loom.tls.caFile']);
  if (certFile !== undefined && keyFile !== undefined && caFile !== undefined) return { certFile, keyFile, caFile };
  const files = { certFile, keyFile, caFile };
  const names = Object.keys(files) as (keyof TlsConfig)[];
  const present = names.find((name) => files[name] !== undefined);
  const missing = names.find((name) => files[name] === undefined);
  if (present === undefined || missing === undefined) return undefined;
  const key = `loom.tls.${missing}`;
  const source = values.sourceOf(`loom.tls.${present}`) ?? DEFAULT_SOURCE;
  throw new ConfigError(
    `${key}: expected a file path, since loom.tls.${present} is set (from ${source}) ` + 'and TLS needs certFile, keyFile and caFile together or none of them',
    { key, source },
  );
}

function leaseTimes(values: Values): LoomConfig['scheduler']['lease'] {
  const pollMs = values.get(fixedKeys['loom.scheduler.lease.pollMs']);
  const timeoutMs = values.get(fixedKeys['loom.scheduler.lease.timeoutMs']);
  const key = 'loom.scheduler.lease.timeoutMs';
  if (timeoutMs < 2 * pollMs) {
    const source = values.sourceOf(key) ?? DEFAULT_SOURCE;
    throw new ConfigError(`${key}: expected at least twice loom.scheduler.lease.pollMs (${pollMs}), got ${timeoutMs} (from ${source})`, { key, source });
  }
  return { pollMs, timeoutMs };
}

function restartDelays(values: Values): LoomConfig['scheduler']['restart'] {
  const initialDelayMs = values.get(fixedKeys['loom.scheduler.restart.initialDelayMs']);
  const maxDelayMs = values.get(fixedKeys['loom.scheduler.restart.maxDelayMs']);
  const key = 'loom.scheduler.restart.maxDelayMs';
  if (maxDelayMs < initialDelayMs) {
    const source = values.sourceOf(key) ?? DEFAULT_SOURCE;
    throw new ConfigError(`${key}: expected at least loom.scheduler.restart.initialDelayMs (${initialDelayMs}), got ${maxDelayMs} (from ${source})`, {
      key,
      source,
    });
  }
  return { initialDelayMs, maxDelayMs };
}

function otlpEndpoint(values: Values, env: NodeJS.ProcessEnv): string | undefined {
  const spec = fixedKeys['loom.telemetry.otlp.endpoint'];
  const fallback = env[OTEL_ENDPOINT_VARIABLE];
  if (values.sourceOf(spec.key) !== undefined || fallback === undefined) return values.get(spec);
  return values.validate(spec, spec.key, { value: fallback, source: `environment variable ${OTEL_ENDPOINT_VARIABLE}` });
}

function entryNames(layer: Layer, map: MapKeySpec): string[] {
  return [...layer.keys()].filter((key) => key.startsWith(map.prefix)).map((key) => key.slice(map.prefix.length));
}

/** The object without its undefined properties, so optional fields are absent rather than undefined. */
function definedOnly<T extends object>(object: T): { [K in keyof T]?: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(object).filter(([, value]) => value !== undefined)) as {
    [K in keyof T]?: Exclude<T[K], undefined>;
  };
}

function skillSettings(values: Values): LoomConfig['skills'] {
  const numbers = (spec: MapKeySpec): Record<string, number> =>
    Object.fromEntries(Object.entries(values.map(spec)).map(([name, text]) => [name, Number(text)]));
  const initialMs = values.get(fixedKeys['loom.skills.backoff.initialMs']);
  const maxMs = values.get(fixedKeys['loom.skills.backoff.maxMs']);
  if (maxMs < initialMs) {
    const key = 'loom.skills.backoff.maxMs';
    const source = values.sourceOf(key) ?? DEFAULT_SOURCE;
    throw new ConfigError(`${key}: expected at least loom.skills.backoff.initialMs (${initialMs}), got ${maxMs} (from ${source})`, { key, source });
  }
  return {
    ...definedOnly({ databaseUrl: values.get(fixedKeys['loom.skills.database.url']) }),
    timeoutMs: values.get(fixedKeys['loom.skills.timeoutMs']),
    timeouts: numbers(skillTimeoutsSpec),
    maxConcurrency: values.get(fixedKeys['loom.skills.maxConcurrency']),
    keywordExtractionMaxConcurrency: values.get(fixedKeys['loom.skills.keywordExtraction.maxConcurrency']),
    concurrency: numbers(skillConcurrencySpec),
    retries: values.get(fixedKeys['loom.skills.retries']),
    backoff: { initialMs, maxMs },
    breaker: {
      failureThreshold: values.get(fixedKeys['loom.skills.breaker.failureThreshold']),
      openMs: values.get(fixedKeys['loom.skills.breaker.openMs']),
    },
    registryCacheMs: values.get(fixedKeys['loom.skills.registry.cacheMs']),
    registrations: Object.fromEntries(
      Object.entries(values.map(skillRegistrationsSpec)).map(([name, text]) => [name, JSON.parse(text) as Record<string, unknown>]),
    ),
  };
}
