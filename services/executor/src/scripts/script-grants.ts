import { readdirSync, realpathSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { type ExecutorConfig } from '../executor-config.js';
import { FailedPreconditionError } from '@loom/domain';

/** One place where loom keeps its own state, and the configuration key (or variable) that puts it there. */
export interface StatePath {
  readonly path: string;
  /** The key (`loom.secrets.keyRingFile`), `--config`, or the `<VAR>_FILE` variable naming it. */
  readonly key: string;
  /** A file's siblings named after it are state too: rotated files (`audit.log.000000000001`), temp files of atomic writes. */
  readonly kind: 'file' | 'directory';
}

/**
 * Every place of loom's own state this configuration names: the data directory, the key ring file,
 * both embedded PostgreSQL data directories, the audit log, the workflow storage and start-up
 * directories, the scheduler state file, the configuration file, TLS files, identity provider
 * files, and every file named by a `<VAR>_FILE` variable. Relative paths are taken from the
 * working directory, as the services that use them take them.
 */
export function statePaths(config: ExecutorConfig): StatePath[] {
  const file = (key: string, path: string | undefined): StatePath[] => (path === undefined ? [] : [{ key, path: resolve(path), kind: 'file' }]);
  const directory = (key: string, path: string): StatePath[] => [{ key, path: resolve(path), kind: 'directory' }];
  return [
    ...directory('loom.data.directory', config.data.directory),
    ...directory('loom.datasource.filesystemRoot', config.datasource.filesystemRoot),
    ...directory('loom.startup.workflows.directory', config.startup.workflows.directory),
    ...directory('loom.embedded.postgres.dataDir', config.embedded.postgres.dataDir),
    ...directory('loom.embedded.graph.dataDir', config.embedded.graph.dataDir),
    ...file('loom.secrets.keyRingFile', config.secrets.keyRingFile),
    ...file('loom.security.audit.log.path', config.security.audit.log.path),
    ...file('loom.scheduler.stateFile', config.scheduler.stateFile),
    ...file('loom.tls.keyFile', config.tls.keyFile),
    ...file('loom.tls.certFile', config.tls.certFile),
    ...file('loom.tls.caFile', config.tls.caFile),
    ...file('loom.auth.oidc.configFile', config.auth.oidc.configFile),
    ...file('loom.graph.sso.providerConfigFile', config.graph.sso.providerConfigFile),
    ...file('--config', config.sources.configFile),
    ...config.sources.valueFiles.flatMap(({ variable, path }) => file(variable, path)),
  ];
}

/** A configured state path holds something a Python script host cannot run without. */
export class StateInGrantError extends FailedPreconditionError {}

/** What a script host may read, computed so that no grant covers loom's state. */
export interface ScriptGrants {
  /** Paths for `--allow-fs-read` and the Python policy, none below another and none holding state. */
  readonly reads: string[];
  /** The optional roots that stay, mounted for Python at their own paths (reads inside them are checked against `reads`). */
  readonly mounts: string[];
  /** Directories that hold state and were granted entry by entry: they cannot be listed. */
  readonly split: string[];
}

/** A path as written, and where it leads once symbolic links are followed. */
interface Place {
  readonly lexical: string;
  readonly real: string;
}

function place(path: string): Place {
  const lexical = resolve(path);
  return { lexical, real: realOf(lexical) };
}

/** The real path, or for a path that does not exist yet, the real path of its nearest existing ancestor joined with the rest. */
function realOf(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    // not there (yet): state made later lands where the ancestor leads
    const parent = dirname(path);
    return parent === path ? path : join(realOf(parent), basename(path));
  }
}

const within = (inner: string, outer: string): boolean => inner === outer || inner.startsWith(outer === '/' ? '/' : `${outer}/`);

/** Whether `outer` is `inner` or one of its ancestors, by either form of each. */
function covers(outer: Place, inner: Place): boolean {
  return [outer.lexical, outer.real].some((o) => [inner.lexical, inner.real].some((i) => within(i, o)));
}

interface StatePlace extends Place {
  readonly state: StatePath;
}

/** Whether `entry` is state: inside a state path, or a sibling file named after a state file. */
function isState(entry: Place, state: StatePlace): boolean {
  if (covers(state, entry)) return true;
  if (state.state.kind !== 'file') return false;
  const name = basename(state.lexical);
  const named = (path: string): boolean => {
    const entryName = basename(path);
    return entryName.startsWith(`${name}.`) || entryName.startsWith(`.${name}.`);
  };
  return (dirname(entry.lexical) === dirname(state.lexical) && named(entry.lexical)) || (dirname(entry.real) === dirname(state.real) && named(entry.real));
}

/**
 * The read grants of a script host. `required` paths (the interpreter, the host's code, the
 * private temp directory) are granted whole, and a state path holding one of them is a
 * StateInGrantError naming the path and its key. Each `optional` root (temp, working and
 * installation directories) is granted whole when it holds no state, left out when state holds
 * it, and otherwise granted entry by entry, leaving out the entries that are state (by name or
 * where their links lead) and splitting those that hold some further down.
 */
export function scriptGrants(state: readonly StatePath[], roots: { readonly required: readonly string[]; readonly optional: readonly string[] }): ScriptGrants {
  const states: StatePlace[] = state.map((entry) => ({ ...place(entry.path), state: entry }));
  for (const path of roots.required) {
    const required = place(path);
    const holder = states.find((entry) => isState(required, entry) || covers(required, entry));
    if (holder !== undefined) {
      throw new StateInGrantError(
        `${holder.state.key}: ${holder.state.path} is loom's state and cannot be kept out of what a Python script may read (${required.lexical}); ` +
          `move it out of ${required.lexical}, or ${required.lexical} out of it`,
      );
    }
  }
  const reads: string[] = roots.required.map((path) => resolve(path));
  const mounts: string[] = [];
  const split: string[] = [];
  const holdsState = (entry: Place): boolean => states.some((stateEntry) => covers(entry, stateEntry));
  const isAnyState = (entry: Place): boolean => states.some((stateEntry) => isState(entry, stateEntry));

  const grantEntries = (directory: Place): void => {
    split.push(directory.lexical);
    for (const name of readdirSync(directory.lexical)) {
      const lexical = join(directory.lexical, name);
      let real: string;
      try {
        real = realpathSync(lexical);
      } catch {
        // a dangling link leads nowhere a script could read; left out
        continue;
      }
      const resolved = { lexical, real };
      if (isAnyState(resolved)) continue;
      if (!holdsState(resolved)) {
        reads.push(resolved.lexical);
      } else if (statSync(resolved.lexical).isDirectory()) {
        grantEntries(resolved);
      }
    }
  };

  for (const path of roots.optional) {
    const root = place(path);
    if (isAnyState(root)) continue;
    mounts.push(root.lexical);
    if (holdsState(root)) grantEntries(root);
    else reads.push(root.lexical);
  }
  return { reads: outermost(reads), mounts: outermost(mounts), split: [...new Set(split)] };
}

/** The paths without repeats and without those below another of them. */
export function outermost(paths: readonly string[]): string[] {
  const unique = [...new Set(paths.map((path) => resolve(path)))].sort();
  return unique.filter((path) => !unique.some((other) => other !== path && within(path, other)));
}
