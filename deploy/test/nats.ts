import { type ChildProcess, spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { dirname, join } from 'node:path';
import { expect } from 'vitest';
import { type ComposeConfig, type ComposeService } from './compose-processes.js';
import { eventually, freePort } from './processes.js';
import { MissingToolError, run, type CommandResult } from './tools.js';

/**
 * The nats-server the deploy checks run: $LOOM_NATS_SERVER (the one scripts/test-env/nats.mjs builds for every test
 * against NATS), else a `nats-server` on PATH.
 */
export function natsServerCommand(): string {
  return process.env.LOOM_NATS_SERVER || 'nats-server';
}

/** `nats-server -c <file> -t`: the server's own check of a configuration file (includes read, values parsed). */
export function checkNatsConfig(file: string, env: NodeJS.ProcessEnv = {}): CommandResult {
  return run(natsServerCommand(), ['-c', file, '-t'], { env: { PATH: process.env.PATH, ...env }, timeoutMs: 30_000 });
}

/** A container's files laid out under `root`: each `[path in the container, content]` written at root + path. */
export function containerRoot(root: string, files: readonly (readonly [string, string])[]): void {
  for (const [path, content] of files) {
    const target = join(root, path);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, content);
  }
}

/** A running nats-server, on loopback ports of its own. */
export interface NatsProcess {
  /** `127.0.0.1:<port>` of the client port. */
  readonly address: string;
  readonly port: number;
  readonly monitorPort: number;
  readonly child: ChildProcess;
  /** Stops the server (SIGTERM) and waits for its exit; a second call waits for the same exit. */
  stop(): Promise<void>;
}

/**
 * Runs the compose file's nats service as a process: its configuration file and its Docker secret
 * laid out under `root` as in the container (so the file's relative include finds the secret), its
 * /data volume a directory of `root`, its ports loopback ones. Resolves once /healthz says JetStream
 * is up.
 */
export async function startComposeNats(options: {
  readonly root: string;
  readonly configFile: string;
  readonly configPath: string;
  readonly secrets: readonly { readonly file: string; readonly name: string }[];
}): Promise<NatsProcess> {
  const { root } = options;
  const data = join(root, 'data');
  mkdirSync(data, { recursive: true });
  containerRoot(root, [[options.configPath, readFileSync(options.configFile, 'utf8').replace(/^(\s*store_dir:\s*)\/data$/m, `$1${data}`)]]);
  mkdirSync(join(root, 'run', 'secrets'), { recursive: true });
  for (const secret of options.secrets) copyFileSync(secret.file, join(root, 'run', 'secrets', secret.name));
  const port = await freePort();
  const monitorPort = await freePort();
  const child = spawn(natsServerCommand(), ['-c', join(root, options.configPath), '-a', '127.0.0.1', '-p', String(port), '-m', String(monitorPort)], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const output: string[] = [];
  child.stderr?.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  let failure: Error | undefined;
  const exited = new Promise<void>((resolve) => child.on('close', () => resolve()));
  child.on('error', (error: NodeJS.ErrnoException) => {
    failure = error.code === 'ENOENT' ? new MissingToolError(natsServerCommand()) : error;
  });
  void exited.then(() => {
    failure ??= new Error(`nats-server exited before it was healthy: ${output.join('')}`);
  });
  await eventually('nats-server healthy with JetStream', async () => {
    if (failure !== undefined) return 'failed';
    const response = await fetch(`http://127.0.0.1:${monitorPort}/healthz?js-enabled-only=true`);
    return response.ok ? 'healthy' : undefined;
  });
  if (failure !== undefined) throw failure;
  let stopping: Promise<void> | undefined;
  return {
    address: `127.0.0.1:${port}`,
    port,
    monitorPort,
    child,
    stop: () => {
      if (stopping === undefined) {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
        stopping = exited;
      }
      return stopping;
    },
  };
}

/** What a NATS server answered a client: its INFO, then the reply to CONNECT with a token and PING. */
export interface NatsHandshake {
  readonly info: { auth_required?: boolean; jetstream?: boolean; version?: string };
  /** `PONG` when the server took the client, else its `-ERR ...` line. */
  readonly reply: string;
}

/** Connects to a NATS server over the plain client protocol, presents `token` (when given) and pings. */
export function natsHandshake(port: number, token: string | undefined): Promise<NatsHandshake> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let buffer = '';
    let info: NatsHandshake['info'] | undefined;
    const finish = (reply: string): void => {
      socket.destroy();
      resolve({ info: info ?? {}, reply });
    };
    socket.setEncoding('utf8');
    socket.on('error', reject);
    socket.on('data', (chunk: string) => {
      buffer += chunk;
      for (let end = buffer.indexOf('\r\n'); end >= 0; end = buffer.indexOf('\r\n')) {
        const line = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        if (line.startsWith('INFO ')) {
          info = JSON.parse(line.slice(5)) as NatsHandshake['info'];
          const connectOptions = { verbose: false, pedantic: false, protocol: 1, ...(token === undefined ? {} : { auth_token: token }) };
          socket.write(`CONNECT ${JSON.stringify(connectOptions)}\r\nPING\r\n`);
        } else if (line === 'PONG' || line.startsWith('-ERR')) {
          finish(line);
          return;
        }
      }
    });
    socket.on('close', () => finish('closed'));
  });
}

/** The compose file's nats service as a process: the configuration file it mounts, run with its secrets under `root`. */
export async function startNatsOfCompose(compose: ComposeConfig, root: string): Promise<NatsProcess> {
  const service = compose.services.nats as ComposeService;
  expect(service.volumes).toContain('nats-data:/data:rw');
  const [configFile, configPath] = (service.volumes?.find((volume) => volume.startsWith('/')) ?? '').split(':');
  expect(service.command).toEqual(['--config', configPath]);
  const secrets = (service.secrets ?? []).map(({ source }) => ({ name: source, file: compose.secrets[source]?.file as string }));
  return startComposeNats({ root, configFile: configFile as string, configPath: configPath as string, secrets });
}
