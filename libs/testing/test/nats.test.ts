import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { natsServerCommand } from '../src/nats.js';
import { NATS_SERVER_ENV, natsServerBinary, NatsServerMissingError, startNatsServer, type NatsTestServer } from '../src/index.js';

const binary = natsServerBinary('testing: startNatsServer');

/**
 * The INFO a NATS server sends first to every client, parsed. A server going down may take the connection and close it
 * (or say nothing) without INFO: that rejects too (code ECONNRESET or ETIMEDOUT), so a poll asks again.
 */
async function serverInfo(url: string): Promise<Record<string, unknown>> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  try {
    const line = await new Promise<string>((resolve, reject) => {
      let received = '';
      const gone = (code: string) => () => reject(Object.assign(new Error(`no INFO from ${url}`), { code }));
      socket.on('data', (chunk: Buffer) => {
        received += chunk.toString();
        const end = received.indexOf('\r\n');
        if (end >= 0) resolve(received.slice(0, end));
      });
      socket.once('error', reject);
      socket.once('close', gone('ECONNRESET'));
      socket.setTimeout(2_000, gone('ETIMEDOUT'));
    });
    expect(line.startsWith('INFO ')).toBe(true);
    return JSON.parse(line.slice('INFO '.length)) as Record<string, unknown>;
  } finally {
    socket.destroy();
  }
}

describe.skipIf(binary === undefined)('startNatsServer', () => {
  let server: NatsTestServer;

  beforeAll(async () => {
    server = await startNatsServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  it('answers on a loopback port with JetStream on, its store in a directory of its own', async () => {
    expect(server.url).toBe(`nats://127.0.0.1:${server.port}`);
    const info = await serverInfo(server.url);
    expect(info).toMatchObject({ jetstream: true, port: server.port });
    expect(info['auth_required']).toBeUndefined();
    expect(existsSync(server.storeDirectory)).toBe(true);
  });

  it('stops and starts again on the same port with the same store; a stop under way is shared', async () => {
    const { port, storeDirectory } = server;
    await Promise.all([server.stop(), server.stop()]);
    expect(server.running).toBe(false);
    await expect(serverInfo(server.url)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    expect(existsSync(join(storeDirectory, 'jetstream'))).toBe(true);
    await server.start();
    expect(server.running).toBe(true);
    expect(server.port).toBe(port);
    expect(server.storeDirectory).toBe(storeDirectory);
    // what JetStream keeps (streams, messages) survives it: @loom/messaging's tests restart a server mid-run
  });

  it('restarts after a crash (SIGKILL) as well', async () => {
    await server.restart({ kill: true });
    expect(await serverInfo(server.url)).toMatchObject({ jetstream: true, port: server.port });
  });

  it('asks for a token when started with one', async () => {
    const guarded = await startNatsServer({ token: 'nats-test-token-0123456789' });
    try {
      expect(guarded.token).toBe('nats-test-token-0123456789');
      expect(await serverInfo(guarded.url)).toMatchObject({ auth_required: true });
    } finally {
      await guarded.close();
    }
  });

  it('close stops the process, removes its directory, and may be called twice', async () => {
    const other = await startNatsServer();
    await Promise.all([other.close(), other.close()]);
    await other.close();
    await expect(serverInfo(other.url)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    expect(existsSync(other.storeDirectory)).toBe(false);
  });

  it('the server ends by itself when the process that started it dies', async () => {
    // a child node process runs the server as startNatsServer does, prints its port, and is killed
    const directory = await mkdtemp(join(tmpdir(), 'loom-nats-orphan-'));
    try {
      const configFile = join(directory, 'nats-server.conf');
      await writeFile(configFile, `listen: "127.0.0.1:-1"\njetstream { store_dir: ${JSON.stringify(join(directory, 'jetstream'))} }\n`);
      const [command, ...args] = natsServerCommand(binary!, configFile);
      const script = [
        "const { spawn } = require('node:child_process');",
        `const server = spawn(${JSON.stringify(command)}, ${JSON.stringify(args)}, { stdio: ['ignore', 'ignore', 'pipe'] });`,
        "let log = '';",
        "server.stderr.on('data', (chunk) => { log += chunk; const m = /client connections on [^\\s]+:(\\d+)/.exec(log); if (m) { console.log(m[1]); log = ''; } });",
      ].join('\n');
      const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
      const port = await new Promise<string>((resolve) => child.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString().trim())));
      const url = `nats://127.0.0.1:${port}`;
      expect(await serverInfo(url)).toMatchObject({ jetstream: true });
      child.kill('SIGKILL');
      await expect
        .poll(() =>
          serverInfo(url).then(
            () => 'answering',
            (error: NodeJS.ErrnoException) => error.code,
          ),
        )
        .toBe('ECONNREFUSED');
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });
});

describe('without a nats-server', () => {
  it('startNatsServer says how to get one', async () => {
    const saved = process.env[NATS_SERVER_ENV];
    delete process.env[NATS_SERVER_ENV];
    try {
      const error = await startNatsServer().catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(NatsServerMissingError);
      expect((error as Error).message).toMatch(/node scripts\/test-env\/nats\.mjs/);
    } finally {
      if (saved !== undefined) process.env[NATS_SERVER_ENV] = saved;
    }
  });

  it('natsServerBinary skips outside CI and throws under CI', () => {
    const saved = { binary: process.env[NATS_SERVER_ENV], ci: process.env['CI'] };
    delete process.env[NATS_SERVER_ENV];
    try {
      delete process.env['CI'];
      expect(natsServerBinary('a suite')).toBeUndefined();
      process.env['CI'] = 'true';
      expect(() => natsServerBinary('a suite')).toThrow(NatsServerMissingError);
    } finally {
      if (saved.binary !== undefined) process.env[NATS_SERVER_ENV] = saved.binary;
      if (saved.ci === undefined) delete process.env['CI'];
      else process.env['CI'] = saved.ci;
    }
  });
});
