import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
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
export function run(
  command: string,
  args: readonly string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string; timeoutMs?: number } = {},
): CommandResult {
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

/** A command the deploy checks need is not installed; `npm test` (scripts/test-env/helm.mjs) installs them. */
export class MissingToolError extends Error {
  constructor(readonly tool: string) {
    super(
      `${tool} is not installed: run the tests through \`npm test\`, which builds helm and installs docker-compose, yamllint and nats-server, ` +
        `or run \`node scripts/test-env/helm.mjs\` and export the LOOM_HELM=... line it prints before running one test file`,
    );
    this.name = 'MissingToolError';
  }
}

/** The helm the chart checks run: $LOOM_HELM (set by `npm test`), else `helm` on PATH. */
export function helmCommand(): string {
  return process.env.LOOM_HELM || 'helm';
}

/** A fresh temporary directory. */
export function scratchDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `loom-deploy-${prefix}-`));
}

/** What the final stage of deploy/Dockerfile says about starting the image. */
export interface ImageSpec {
  readonly env: Record<string, string>;
  readonly workdir: string;
  readonly user: string;
  readonly entrypoint: string[];
  readonly cmd: string[];
  readonly volumes: string[];
}

/** Reads the final stage of deploy/Dockerfile (ENV KEY=VALUE pairs, exec-form ENTRYPOINT and CMD). */
export function imageSpec(dockerfile = join(deployDir, 'Dockerfile')): ImageSpec {
  const text = readFileSync(dockerfile, 'utf8').replace(/\\\n/g, ' ');
  const lines = text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
  const finalStage = lines.slice(lines.map((line) => line.startsWith('FROM ')).lastIndexOf(true));
  const spec = { env: {} as Record<string, string>, workdir: '/', user: 'root', entrypoint: [] as string[], cmd: [] as string[], volumes: [] as string[] };
  for (const line of finalStage) {
    const [instruction = '', ...rest] = line.split(/\s+/);
    const argument = line.slice(instruction.length).trim();
    if (instruction === 'ENV') {
      for (const pair of rest) {
        const match = /^([A-Za-z_][A-Za-z0-9_]*)=(\S*)$/.exec(pair);
        if (match === null) throw new Error(`Dockerfile ENV: expected KEY=VALUE without spaces, got ${pair}`);
        spec.env[match[1] as string] = match[2] as string;
      }
    } else if (instruction === 'WORKDIR') spec.workdir = argument;
    else if (instruction === 'USER') spec.user = argument;
    else if (instruction === 'ENTRYPOINT') spec.entrypoint = JSON.parse(argument) as string[];
    else if (instruction === 'CMD') spec.cmd = JSON.parse(argument) as string[];
    else if (instruction === 'VOLUME') spec.volumes = JSON.parse(argument) as string[];
  }
  return spec;
}
