import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { delimiter, dirname, join, resolve } from 'node:path';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { FailedPreconditionError } from '@loom/domain';
import { outermost, scriptGrants, type StatePath } from './script-grants.js';

export { outermost };

/** The script host's entry point (the same relative place from src/scripts and dist/scripts). */
const HOST_ENTRY = fileURLToPath(new URL('../../script-host/python-host.mjs', import.meta.url));
/** The loom installation: the directory holding services/ and node_modules/. */
export const INSTALLATION_DIR = resolve(dirname(HOST_ENTRY), '../../..');
const PYODIDE_DIR = dirname(createRequire(import.meta.url).resolve('pyodide/package.json'));

/** Environment variables a script host gets, policy or not: none of the service's own (they carry keys and tokens). */
const HOST_ENVIRONMENT: NodeJS.ProcessEnv = { LANG: 'C.UTF-8' };

/** Where and how Python script hosts run. */
export interface PythonSandbox {
  /** `loom.security.serverPolicy.enabled`: the restrictive policy (see docs/security.md). */
  readonly policy: boolean;
  /** The command that puts a process in its own network and PID namespaces. */
  readonly isolate: readonly string[];
  /** loom's own state: no grant covers it (see script-grants.ts). */
  readonly state: readonly StatePath[];
}

/** Python scripts cannot run here: no way to take the network away from them. */
export class SandboxUnavailableError extends FailedPreconditionError {}

let probed: readonly string[] | undefined | null = null;

/** An executable on the service's PATH, as an absolute path (a script host's scrubbed environment has no PATH). */
function onPath(name: string): string | undefined {
  return (process.env.PATH ?? '/usr/bin:/bin')
    .split(delimiter)
    .map((dir) => join(dir, name))
    .find((path) => existsSync(path));
}

/**
 * The namespace command of this machine: `unshare -n -p -f --kill-child` as root, with `-r` (a
 * user namespace) otherwise; undefined when neither works (no util-linux, or namespaces are not
 * allowed). Probed once per process.
 */
export function namespaceCommand(): readonly string[] | undefined {
  if (probed !== null) return probed;
  probed = undefined;
  const unshare = onPath('unshare');
  if (unshare === undefined) return probed;
  for (const candidate of [
    [unshare, '-n', '-p', '-f', '--kill-child'],
    [unshare, '-r', '-n', '-p', '-f', '--kill-child'],
  ]) {
    const [file, ...args] = candidate as [string, ...string[]];
    const result = spawnSync(file, [...args, 'true'], { stdio: 'ignore', timeout: 5_000 });
    if (result.status === 0) {
      probed = candidate;
      break;
    }
  }
  return probed;
}

/** The sandbox for this process, or SandboxUnavailableError naming what is missing. */
export function pythonSandbox(policy: boolean, state: readonly StatePath[] = []): PythonSandbox {
  const isolate = namespaceCommand();
  if (isolate === undefined) {
    throw new SandboxUnavailableError(
      "Python script components need network and PID namespaces ('unshare -n -p -f', util-linux) so that scripts have no network, and this machine refuses them; " +
        'run loom where unshare works (as root, or with user namespaces allowed), or use JavaScript scripts',
    );
  }
  return { policy, isolate, state };
}

/** How to start one script host. */
export interface SandboxCommand {
  readonly file: string;
  readonly args: string[];
  readonly env: NodeJS.ProcessEnv;
  readonly pyodideDir: string;
  /** What the script may read (under the policy): temp, working, private temp and installation directories, less loom's state. */
  readonly readGrants: string[];
  /** Directories mounted for Python at their own paths. */
  readonly mounts: string[];
  /** Granted directories that hold state, granted entry by entry (they cannot be listed). */
  readonly split: string[];
}

/** The Node.js part of a script host's command line: no warnings, WebAssembly memory and heap capped. */
function nodeCommand(memoryLimitMb: number): string[] {
  return [
    process.execPath,
    '--no-warnings',
    `--wasm-max-mem-pages=${memoryLimitMb * 16}`,
    `--max-old-space-size=${Math.max(64, Math.ceil(memoryLimitMb / 2))}`,
  ];
}

/**
 * The command line of a script host that makes a warm interpreter's snapshot (warm-interpreters.ts):
 * the same namespaces, memory cap and empty environment as any script host, at a low CPU priority
 * (`nice`, where there is one); under the policy it may read only the interpreter and the host's own
 * code, and write nothing.
 */
export function snapshotMakerCommand(sandbox: PythonSandbox, memoryLimitMb: number): Omit<SandboxCommand, 'readGrants' | 'mounts' | 'split'> {
  const node = nodeCommand(memoryLimitMb);
  if (sandbox.policy) node.push('--experimental-permission', ...outermost([PYODIDE_DIR, HOST_ENTRY]).map((path) => `--allow-fs-read=${path}`));
  const nice = onPath('nice');
  const command = [...(nice === undefined ? [] : [nice, '-n', '10']), ...sandbox.isolate, ...node, HOST_ENTRY];
  const [file, ...args] = command as [string, ...string[]];
  return { file, args, env: HOST_ENVIRONMENT, pyodideDir: PYODIDE_DIR };
}

/**
 * The command line of a script host. Always: its own network namespace (no network at all), its
 * own PID namespace (no other process to signal), WebAssembly memory capped at the limit. Under
 * the policy also: Node's permission model (reads only of the grants and the interpreter, writes
 * only of the private temp directory, no child processes, workers or native addons). Policy or
 * not, the host starts with an environment that has nothing of the service's.
 */
export function sandboxCommand(sandbox: PythonSandbox, options: { memoryLimitMb: number; privateDir: string }): SandboxCommand {
  const privateDir = resolve(options.privateDir);
  const [file, ...isolate] = sandbox.isolate as [string, ...string[]];
  const node = nodeCommand(options.memoryLimitMb);
  let grants = { reads: [privateDir], mounts: [privateDir], split: [] as string[] };
  if (sandbox.policy) {
    // grants that never cover loom's state (throws StateInGrantError when that cannot be)
    const computed = scriptGrants(sandbox.state, { required: [PYODIDE_DIR, HOST_ENTRY, privateDir], optional: [tmpdir(), process.cwd(), INSTALLATION_DIR] });
    grants = { reads: computed.reads, mounts: outermost([...computed.mounts, privateDir]), split: computed.split };
    // one flag per path (Node 20 reads no lists), and neither a repeat nor a path below another:
    // Node 20's permission tree aborts the process on some of those
    node.push('--experimental-permission', ...grants.reads.map((path) => `--allow-fs-read=${path}`), `--allow-fs-write=${privateDir}`);
  }
  return {
    file,
    args: [...isolate, ...node, HOST_ENTRY],
    env: HOST_ENVIRONMENT,
    pyodideDir: PYODIDE_DIR,
    readGrants: grants.reads,
    mounts: grants.mounts,
    split: grants.split,
  };
}
