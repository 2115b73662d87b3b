import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { parseLines } from 'dot-properties';
import { parse as parseYaml } from 'yaml';
import { ConfigError } from './config-error.js';
import { envVarFor, fixedKeys, isKnownKey, keyFamilies, type MapKeySpec, serviceAddressKey, serviceNames } from './config-keys.js';

/** One value as a source gave it, before validation, and where it came from. */
export interface RawValue {
  readonly value: unknown;
  /** Completes "from ...", e.g. `environment variable SERVER_PORT`. */
  readonly source: string;
}

/** The values one source sets, by key. */
export type Layer = Map<string, RawValue>;

/**
 * Reads a `.yaml`/`.yml` or `.properties` file into keys. Nested YAML maps become dotted keys;
 * YAML nulls are treated as not written. Keys outside `loom.` and `server.` are ignored; unknown
 * keys inside them are errors.
 */
export function readConfigFile(path: string): Layer {
  const source = `config file ${path}`;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError(`${source}: cannot read it: ${reason(error)}`, { source, cause: error });
  }
  const extension = extname(path).toLowerCase();
  let entries: [string, unknown][];
  if (extension === '.yaml' || extension === '.yml') {
    entries = yamlEntries(text, source);
  } else if (extension === '.properties') {
    entries = parseLines(text).filter((line) => Array.isArray(line)) as [string, string][];
  } else {
    throw new ConfigError(`${source}: unsupported file type "${extension}", expected .yaml, .yml or .properties`, { source });
  }
  const layer: Layer = new Map();
  for (const [key, value] of entries) {
    if (value === null || !isLoomKey(key)) continue;
    checkKnown(key, source);
    if (layer.has(key)) throw new ConfigError(`${key}: set more than once (in ${source})`, { key, source });
    layer.set(key, { value, source });
  }
  return layer;
}

/** Parses `--set key=value` overrides; the last one for a key wins. */
export function parseOverrides(overrides: readonly string[]): Layer {
  const layer: Layer = new Map();
  for (const override of overrides) {
    const equals = override.indexOf('=');
    const key = override.slice(0, Math.max(equals, 0)).trim();
    if (key === '') {
      throw new ConfigError(`--set ${JSON.stringify(override)}: expected key=value`, { source: '--set' });
    }
    checkKnown(key, '--set');
    layer.set(key, { value: override.slice(equals + 1), source: '--set' });
  }
  return layer;
}

/**
 * Reads the environment variables of every key (and their `_FILE` variants). `entryNames` gives
 * the names of map entries set elsewhere, so that `LOOM_AUTH_TOKENS_MYAPP` overrides
 * `loom.auth.tokens.my-app`. Other variables are ignored.
 */
export function readEnvironment(env: NodeJS.ProcessEnv, entryNames: (map: MapKeySpec) => readonly string[]): Layer {
  const layer: Layer = new Map();
  const keys = [...Object.keys(fixedKeys), ...serviceNames.map(serviceAddressKey)];
  for (const key of keys) {
    const raw = readVariable(env, envVarFor(key), key);
    if (raw !== undefined) layer.set(key, raw);
  }
  for (const map of Object.values(keyFamilies)) {
    const prefix = envVarFor(map.prefix);
    const variables = new Set(
      Object.keys(env)
        .filter((name) => name.startsWith(prefix))
        .map((name) => name.replace(/_FILE$/, '')),
    );
    for (const variable of variables) {
      const suffix = variable.slice(prefix.length).toUpperCase();
      if (suffix === '') continue;
      const key = map.prefix + entryName(suffix, entryNames(map), variable, map);
      const raw = readVariable(env, variable, key);
      if (raw === undefined) continue;
      const earlier = layer.get(key);
      if (earlier !== undefined) {
        throw new ConfigError(`${key}: set by both ${earlier.source} and ${raw.source}`, { key, source: raw.source });
      }
      layer.set(key, raw);
    }
  }
  return layer;
}

/** The map entry an environment variable suffix names: an entry set elsewhere, a service, or the suffix in lower case. */
function entryName(suffix: string, known: readonly string[], variable: string, map: MapKeySpec): string {
  const matches = [...new Set(known.filter((name) => envVarFor(name) === suffix))];
  if (matches.length > 1) {
    const keys = matches.map((name) => map.prefix + name).join(' and ');
    throw new ConfigError(`environment variable ${variable}: matches both ${keys}; set them by name with --set instead`, {
      source: `environment variable ${variable}`,
    });
  }
  return matches[0] ?? serviceNames.find((service) => envVarFor(service) === suffix) ?? suffix.toLowerCase();
}

/** Reads VAR, or the file named by VAR_FILE with trailing newlines removed; both set is an error. */
function readVariable(env: NodeJS.ProcessEnv, variable: string, key: string): RawValue | undefined {
  const fileVariable = `${variable}_FILE`;
  const direct = env[variable];
  const path = env[fileVariable];
  if (direct !== undefined && path !== undefined) {
    throw new ConfigError(`${key}: both environment variables ${variable} and ${fileVariable} are set; set only one`, {
      key,
      source: `environment variables ${variable} and ${fileVariable}`,
    });
  }
  if (direct !== undefined) return { value: direct, source: `environment variable ${variable}` };
  if (path === undefined) return undefined;
  const source = `environment variable ${fileVariable}`;
  try {
    return { value: readFileSync(path, 'utf8').replace(/[\r\n]+$/, ''), source: `${source} (file ${path})` };
  } catch (error) {
    throw new ConfigError(`${key}: cannot read file ${path} named by ${source}: ${reason(error)}`, { key, source, cause: error });
  }
}

function yamlEntries(text: string, source: string): [string, unknown][] {
  let document: unknown;
  try {
    document = parseYaml(text, { uniqueKeys: true });
  } catch (error) {
    // only the first line: the rest is a snippet of the file, which may hold a secret
    const firstLine = reason(error).split('\n')[0] ?? '';
    throw new ConfigError(`${source}: not valid YAML: ${firstLine.replace(/:$/, '')}`, { source, cause: error });
  }
  if (document === null || document === undefined) return [];
  if (!isMap(document)) throw new ConfigError(`${source}: expected a map of keys at the top level`, { source });
  const entries: [string, unknown][] = [];
  flatten(document, '', entries);
  return entries;
}

function flatten(value: unknown, prefix: string, out: [string, unknown][]): void {
  if (!isMap(value)) {
    out.push([prefix, value]);
    return;
  }
  for (const [name, child] of Object.entries(value)) flatten(child, prefix === '' ? name : `${prefix}.${name}`, out);
}

function isMap(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isLoomKey(key: string): boolean {
  return key === 'loom' || key === 'server' || key.startsWith('loom.') || key.startsWith('server.');
}

function checkKnown(key: string, source: string): void {
  if (isKnownKey(key)) return;
  const suggestion = closestKey(key);
  const hint = suggestion === undefined ? '' : `; did you mean ${suggestion}?`;
  throw new ConfigError(`${key}: unknown configuration key (from ${source})${hint}`, { key, source });
}

/** The known key nearest to a misspelt one, if it is near enough to be a typo. */
function closestKey(key: string): string | undefined {
  const candidates = [
    ...Object.keys(fixedKeys),
    ...serviceNames.map(serviceAddressKey),
    ...Object.values(keyFamilies).map(
      (map) =>
        map.prefix +
        key
          .split('.')
          .slice(map.prefix.split('.').length - 1)
          .join('.'),
    ),
  ];
  let best: string | undefined;
  let bestDistance = Math.max(3, Math.floor(key.length / 8)) + 1;
  for (const candidate of candidates) {
    const distance = editDistance(key.toLowerCase(), candidate.toLowerCase());
    if (distance < bestDistance && isKnownKey(candidate)) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}

function reason(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
