import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { AssertionError } from 'node:assert';
import { Writable } from 'node:stream';
import { Client, credentials, Metadata, type ServiceError, status } from '@grpc/grpc-js';
import { loadConfig } from '@loom/config';
import { createLogger, type Logger } from '@loom/telemetry';
import { type ServiceDefinitionLike } from './handlers.js';
import { type RunningServices, startServices } from './run-services.js';
import { type ServiceModule } from './service-module.js';

/** Serves modules on a free loopback port with test defaults (no Prometheus, anonymous callers allowed). */
export function serveForTest(
  modules: readonly ServiceModule[],
  overrides: readonly string[] = [],
  options: { logger?: Logger; configFile?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<RunningServices> {
  const config = loadConfig({
    env: options.env ?? {},
    ...(options.configFile === undefined ? {} : { configFile: options.configFile }),
    overrides: ['server.port=0', 'loom.telemetry.prometheus.port=0', 'loom.auth.allowAnonymous=true', 'loom.secrets.generateKeys=true', ...overrides],
  });
  return startServices({ config, modules, logger: options.logger ?? createLogger({ level: 'silent' }) });
}

/** The status every RPC of a definition answers with an empty request, by method path. */
export async function probeEveryRpc(definition: ServiceDefinitionLike, address: string): Promise<Record<string, { code: status; details: string }>> {
  const client = new Client(address, credentials.createInsecure());
  try {
    const entries = await Promise.all(
      Object.values(definition).map(async (method) => {
        const outcome = await new Promise<{ code: status; details: string }>((resolve) => {
          const done = (error: ServiceError | null): void => resolve({ code: error?.code ?? status.OK, details: error?.details ?? '' });
          const serialize = (): Buffer => Buffer.alloc(0);
          const deserialize = (value: Buffer): Buffer => value;
          if (method.responseStream) {
            const stream = client.makeServerStreamRequest(method.path, serialize, deserialize, {}, new Metadata());
            stream.on('data', () => undefined);
            stream.on('error', done);
            stream.on('end', () => done(null));
          } else {
            client.makeUnaryRequest(method.path, serialize, deserialize, {}, new Metadata(), (error) => done(error));
          }
        });
        return [method.path, outcome] as const;
      }),
    );
    return Object.fromEntries(entries);
  } finally {
    client.close();
  }
}

/** The error a call that must fail ends with; a call that succeeds fails the test. */
export async function failure(promise: Promise<unknown>): Promise<ServiceError> {
  try {
    await promise;
  } catch (error) {
    return error as ServiceError;
  }
  throw new AssertionError({ message: 'expected the call to fail, and it succeeded' });
}

/** A service running as a child process (`node <its dist/main.js>`), on the port it logged. */
export interface ServiceProcess {
  readonly process: ChildProcess;
  readonly address: string;
}

/**
 * Starts a service's built main with `--set` overrides and resolves once it logs 'loom listening'; rejects with its
 * stderr when it exits first. For crash tests that kill the process.
 */
export async function startServiceProcess(main: string, overrides: readonly string[]): Promise<ServiceProcess> {
  const child = spawn(process.execPath, [main, ...overrides.flatMap((override) => ['--set', override])], {
    env: { PATH: process.env.PATH },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stderr: string[] = [];
  child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
  const port = await new Promise<number>((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      const entry = JSON.parse(line) as { msg?: string; port?: number };
      if (entry.msg === 'loom listening' && typeof entry.port === 'number') resolve(entry.port);
    });
    child.on('exit', (code) => reject(new AssertionError({ message: `${main} exited with ${code} before listening: ${stderr.join('')}` })));
  });
  return { process: child, address: `127.0.0.1:${port}` };
}

/** A debug logger whose JSON lines are kept in `lines` as they are written, for assertions on what was logged. */
export function capturedLogger(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer | string, _encoding, callback) {
      lines.push(
        ...chunk
          .toString()
          .split('\n')
          .filter((line) => line !== ''),
      );
      callback();
    },
  });
  return { logger: createLogger({ level: 'debug', destination }), lines };
}
export { startFakeSkill, type FakeSkill, type FakeSkillAnswer, type FakeSkillRequest } from './fake-skill.js';

/** A loopback port free at this moment: for processes whose ports must be known before they start. */
export { closedPort as freeLoopbackPort } from '@loom/testing';
