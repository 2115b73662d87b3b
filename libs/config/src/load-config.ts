import { ConfigError } from './config-error.js';
import {
  type DerivedKeySpec,
  type FixedKey,
  fixedKeys,
  isDerived,
  keyFamilies,
  type KeySpec,
  type MapKeySpec,
  serviceAddressKey,
  serviceAddressSpec,
  type ServiceName,
  serviceNames,
  type ValueSpec,
} from './config-keys.js';
import { configPath, type Expand, type KeyTree, placeAt, type ServiceEndpoint } from './config-tree.js';
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

/** The TLS files of this process. */
export interface TlsConfig {
  readonly certFile: string;
  readonly keyFile: string;
  readonly caFile: string;
}

/**
 * loom's validated configuration: every key of the table at its place (see config-tree.ts), and
 * what no key sets: where the skills keep their data, and the files the configuration was read from.
 */
export type LoomConfig = Expand<
  KeyTree & {
    readonly data: {
      /** `<loom.data.directory>/skills`: data of the skills (models, lexicons) kept with the rest of the state. */
      readonly skillsDirectory: string;
    };
    /** Files this configuration was read from (loom's state: scripts never read them). */
    readonly sources: {
      /** The `--config` file. */
      readonly configFile?: string;
      /** Every file named by a `<VAR>_FILE` environment variable, loom's keys or not. */
      readonly valueFiles: readonly { readonly variable: string; readonly path: string }[];
    };
  }
>;

/** The configuration with the source of every value, e.g. `server.port` -> `environment variable SERVER_PORT`. */
export interface ResolvedConfig {
  readonly config: LoomConfig;
  /** Key to source: `default`, `config file <path>`, `environment variable <NAME>` or `--set`. */
  readonly origins: ReadonlyMap<string, string>;
}

const DEFAULT_SOURCE = 'default';

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

  const tree: Record<string, unknown> = {};
  const resolved = new Map<string, unknown>();
  for (const [key, keySpec] of Object.entries(fixedKeys) as [FixedKey, KeySpec<unknown>][]) {
    const value = isDerived(keySpec) ? derivedValue(values, keySpec, resolved) : keyValue(values, keySpec, env);
    resolved.set(key, value);
    placeAt(tree, configPath(key), value);
  }
  for (const [name, family] of Object.entries(keyFamilies) as [string, MapKeySpec][]) placeAt(tree, configPath(name), values.map(family));
  placeAt(tree, configPath('loom.services'), serviceEndpoints(values));
  const dataDirectory = resolved.get('loom.data.directory') as string;
  placeAt(tree, ['data', 'skillsDirectory'], inside(dataDirectory, 'skills'));
  placeAt(tree, ['sources'], {
    ...definedOnly({ configFile: options.configFile }),
    valueFiles: Object.entries(env)
      .filter((entry): entry is [string, string] => entry[0].endsWith('_FILE') && typeof entry[1] === 'string' && entry[1] !== '')
      .map(([variable, path]) => ({ variable, path })),
  });
  // The tree holds every key of the table at its configPath, which is how LoomConfig is derived from the same table.
  const config = tree as LoomConfig;
  for (const check of crossKeyChecks) check(config, values);
  return { config, origins: values.origins };
}

/** A key's value from the sources, its fallback variable, or its built-in default. */
function keyValue(values: Values, keySpec: KeySpec<unknown>, env: NodeJS.ProcessEnv): unknown {
  const fallback = keySpec.fallbackVariable === undefined ? undefined : env[keySpec.fallbackVariable];
  if (values.sourceOf(keySpec.key) !== undefined || fallback === undefined) return values.get(keySpec);
  return values.validate(keySpec, keySpec.key, { value: fallback, source: `environment variable ${keySpec.fallbackVariable}` });
}

/** A key's value from the sources, else the place or key its default follows. */
function derivedValue(values: Values, keySpec: DerivedKeySpec<unknown>, resolved: ReadonlyMap<string, unknown>): unknown {
  const own = values.get(keySpec);
  if (own !== undefined) return own;
  const { derived } = keySpec;
  const base = 'inside' in derived ? inside(resolved.get('loom.data.directory') as string, derived.inside) : resolved.get(derived.sameAs);
  if (base === undefined)
    throw new ConfigError(`${keySpec.key} follows ${JSON.stringify(derived)}, which the key table resolves later or not at all`, { key: keySpec.key });
  return values.derive(keySpec.key, base);
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

/** The single sign-on graph settings when they are configured (resolveConfig has checked they are complete). */
export function graphSsoSettings(sso: LoomConfig['graph']['sso']): GraphSsoConfig | undefined {
  const { providerConfigFile, uri } = sso;
  if (providerConfigFile === undefined || uri === undefined) return undefined;
  return { ...sso, providerConfigFile, uri };
}

/** The TLS files when they are configured (resolveConfig has checked that all three or none are). */
export function tlsFiles(tls: LoomConfig['tls']): TlsConfig | undefined {
  const { certFile, keyFile, caFile } = tls;
  return certFile === undefined || keyFile === undefined || caFile === undefined ? undefined : { certFile, keyFile, caFile };
}

/** A rule over several keys, checked once every key has its value. */
type CrossKeyCheck = (config: LoomConfig, values: Values) => void;

/** A ConfigError for `key`, naming where its value came from. */
function crossKeyError(values: Values, key: string, expected: string, got: unknown): ConfigError {
  const source = values.sourceOf(key) ?? DEFAULT_SOURCE;
  return new ConfigError(`${key}: expected ${expected}, got ${String(got)} (from ${source})`, { key, source });
}

/** `key` must be at least `floorKey`'s value (times `factor`). */
function atLeast(key: string, floorKey: string, factor: number, value: number, floor: number, values: Values): void {
  const times = factor === 1 ? '' : factor === 2 ? 'twice ' : `${factor} times `;
  if (value < factor * floor) throw crossKeyError(values, key, `at least ${times}${floorKey} (${floor})`, value);
}

const crossKeyChecks: readonly CrossKeyCheck[] = [
  ({ secrets }, values) => {
    const key = 'loom.secrets.activeKeyId';
    if (secrets.activeKeyId === undefined || Object.hasOwn(secrets.keys, secrets.activeKeyId)) return;
    const ids = Object.keys(secrets.keys);
    const expected = ids.length === 0 ? 'the id of a key in loom.secrets.keys, but none is configured' : `one of the loom.secrets.keys ids (${ids.join(', ')})`;
    throw crossKeyError(values, key, expected, JSON.stringify(secrets.activeKeyId));
  },
  ({ tls }, values) => {
    const names = ['certFile', 'keyFile', 'caFile'] as const;
    const present = names.find((name) => tls[name] !== undefined);
    const missing = names.find((name) => tls[name] === undefined);
    if (present === undefined || missing === undefined) return;
    const key = `loom.tls.${missing}`;
    const source = values.sourceOf(`loom.tls.${present}`) ?? DEFAULT_SOURCE;
    throw new ConfigError(
      `${key}: expected a file path, since loom.tls.${present} is set (from ${source}) and TLS needs certFile, keyFile and caFile together or none of them`,
      { key, source },
    );
  },
  ({ graph: { sso } }) => {
    if (sso.providerConfigFile === undefined && sso.uri === undefined) return;
    if (sso.providerConfigFile === undefined || sso.uri === undefined) {
      const missing = sso.providerConfigFile === undefined ? 'loom.graph.sso.providerConfigFile' : 'loom.graph.sso.uri';
      throw new ConfigError(`${missing} is required when the other loom.graph.sso keys are set`, { key: missing });
    }
    if (sso.mode === 'impersonate' && (sso.user === undefined || sso.password === undefined)) {
      const missing = sso.user === undefined ? 'loom.graph.sso.user' : 'loom.graph.sso.password';
      throw new ConfigError(`${missing} is required with loom.graph.sso.mode impersonate (the account that impersonates users)`, { key: missing });
    }
  },
  ({ messaging: { nats } }, values) => {
    const key = 'loom.messaging.nats.credentials';
    if (nats.token === undefined || nats.credentials === undefined) return;
    const source = values.sourceOf(key) ?? DEFAULT_SOURCE;
    throw new ConfigError(`${key}: expected no value, since loom.messaging.nats.token is set: loom connects to NATS with one of them (from ${source})`, {
      key,
      source,
    });
  },
  ({ messaging: { nats } }, values) => {
    if ((nats.tls.cert === undefined) === (nats.tls.key === undefined)) return;
    const [missing, present] = nats.tls.cert === undefined ? ['cert', 'key'] : ['key', 'cert'];
    const key = `loom.messaging.nats.tls.${missing}`;
    const source = values.sourceOf(`loom.messaging.nats.tls.${present}`) ?? DEFAULT_SOURCE;
    throw new ConfigError(`${key}: expected PEM text, since loom.messaging.nats.tls.${present} is set (from ${source}): a client certificate needs its key`, {
      key,
      source,
    });
  },
  ({ scheduler: { lease } }, values) => atLeast('loom.scheduler.lease.timeoutMs', 'loom.scheduler.lease.pollMs', 2, lease.timeoutMs, lease.pollMs, values),
  ({ scheduler: { restart } }, values) =>
    atLeast('loom.scheduler.restart.maxDelayMs', 'loom.scheduler.restart.initialDelayMs', 1, restart.maxDelayMs, restart.initialDelayMs, values),
  ({ skills: { backoff } }, values) => atLeast('loom.skills.backoff.maxMs', 'loom.skills.backoff.initialMs', 1, backoff.maxMs, backoff.initialMs, values),
];

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
  map<T>(spec: MapKeySpec<T>): Record<string, T> {
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

function serviceEndpoints(values: Values): Record<ServiceName, ServiceEndpoint> {
  const endpoints = {} as Record<ServiceName, ServiceEndpoint>;
  for (const service of serviceNames) {
    endpoints[service] = definedOnly({ address: values.getAs(serviceAddressSpec, serviceAddressKey(service)) });
  }
  return endpoints;
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
