import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root. */
export const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

/** deploy/ in the repository. */
export const deployDir = join(repoRoot, 'deploy');

/** The outcome of a finished command. */
export interface CommandResult {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a command to completion (no shell). */
export function run(command: string, args: readonly string[], options: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string; timeoutMs?: number } = {}): CommandResult {
  const result = spawnSync(command, args, {
    cwd: options.cwd ?? repoRoot,
    env: options.env ?? process.env,
    encoding: 'utf8',
    timeout: options.timeoutMs ?? 120_000,
    maxBuffer: 64 * 1024 * 1024,
    ...(options.input === undefined ? {} : { input: options.input }),
  });
  if (result.error !== undefined) {
    const code = (result.error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new MissingToolError(command);
    throw result.error;
  }
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** A command the deploy checks need is not installed; `.ci/run` installs them. */
export class MissingToolError extends Error {
  constructor(readonly tool: string) {
    super(`${tool} is not installed: run .ci/run, or apt-get install the packages it lists (docker-compose, yamllint, golang-go, golang-github-masterminds-sprig-dev, golang-k8s-sigs-yaml-dev)`);
    this.name = 'MissingToolError';
  }
}

/** A fresh temporary directory. */
export function scratchDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `loom-deploy-${prefix}-`));
}
