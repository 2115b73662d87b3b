import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ListenError } from './listen-error.js';

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
});

/** Listens on host:port and answers the error the operating system gave, or undefined when it listened. */
async function listenFailure(host: string, port: number): Promise<Error | undefined> {
  const server = createServer();
  return new Promise((resolve) => {
    server.once('error', resolve);
    server.listen(port, host, () => {
      servers.push(server);
      resolve(undefined);
    });
  });
}

async function takenPort(): Promise<number> {
  expect(await listenFailure('127.0.0.1', 0)).toBeUndefined();
  return (servers.at(-1)?.address() as { port: number }).port;
}

describe('ListenError', () => {
  it('names the port setting of a port in use, from a real EADDRINUSE', async () => {
    const port = await takenPort();
    const failure = await listenFailure('127.0.0.1', port);
    const error = new ListenError({ host: '127.0.0.1', port, portSetting: 'loom.telemetry.prometheus.port' }, failure);
    expect(error).toBeInstanceOf(ListenError);
    expect(error.message).toBe(`loom.telemetry.prometheus.port ${port} is in use (EADDRINUSE): set loom.telemetry.prometheus.port to a free port`);
    expect(error).toMatchObject({
      kind: 'failed-precondition',
      retryable: false,
      code: 'EADDRINUSE',
      setting: 'loom.telemetry.prometheus.port',
      port,
      cause: failure,
    });
  });

  it('reads the code from the message when the error has none (grpc-js)', () => {
    const grpc = new Error('No address added out of total 1 resolved errors: [listen EADDRINUSE: address already in use 127.0.0.1:8100]');
    const error = new ListenError({ host: '127.0.0.1', port: 8100, portSetting: 'server.port', hostSetting: 'server.host' }, grpc);
    expect(error.message).toBe('server.port 8100 is in use (EADDRINUSE): set server.port to a free port');
  });

  it('names the host setting of an address this machine does not have', async () => {
    // 192.0.2.0/24 is TEST-NET-1: never an address of this machine
    const failure = await listenFailure('192.0.2.1', 0);
    const error = new ListenError({ host: '192.0.2.1', port: 0, portSetting: 'server.port', hostSetting: 'server.host' }, failure);
    expect(error.code).toBe('EADDRNOTAVAIL');
    expect(error.setting).toBe('server.host');
    expect(error.message).toMatch(/^server\.host: 192\.0\.2\.1 is not an address of this machine \(EADDRNOTAVAIL\): set server\.host to/);
  });

  it('names the host setting of a host name that does not resolve', () => {
    const error = new ListenError(
      { host: 'nowhere.invalid', port: 8100, portSetting: 'server.port', hostSetting: 'server.host' },
      new Error('getaddrinfo ENOTFOUND nowhere.invalid'),
    );
    expect(error.message).toBe('server.host: nowhere.invalid does not resolve (ENOTFOUND): set server.host to an address of this machine');
  });

  it('says which setting to check for a failure it has no advice for, in one line', () => {
    const error = new ListenError({ host: '127.0.0.1', port: 9, portSetting: 'intake.options.port' }, new Error('socket closed'));
    expect(error.message).toBe('intake.options.port 9 cannot be bound on 127.0.0.1 (socket closed): check intake.options.port');
    expect(error.code).toBeUndefined();
  });
});
