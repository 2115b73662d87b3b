import { createRequire } from 'node:module';
import { createServer, type Server } from 'node:net';
import { dirname, join } from 'node:path';
import { credentials, loadPackageDefinition, Metadata, type ClientDuplexStream, type ClientReadableStream, type StatusObject } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { loomServiceNames } from '@loom/contracts';
import { healthDefinition } from '@loom/service-kit';
import { makeGenericClientConstructor } from '@grpc/grpc-js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { checkHealth } from '../src/index.js';
import { type InProcessLoom, runCli, startLoom } from './loom-in-process.js';
import { type LoomProcess, runLoomBinary, startLoomProcess } from './loom-process.js';

const running: InProcessLoom[] = [];
const processes: LoomProcess[] = [];
afterEach(async () => {
  for (const loom of running.splice(0)) await loom.stop();
  for (const loom of processes.splice(0)) {
    if (loom.child.exitCode === null && loom.child.signalCode === null) {
      loom.child.kill('SIGKILL');
      await loom.exited;
    }
  }
});

async function serve(args: string[] = []): Promise<InProcessLoom> {
  const loom = await startLoom(args);
  running.push(loom);
  return loom;
}

interface ReflectionResponse {
  list_services_response?: { service: { name: string }[] };
  file_descriptor_response?: { file_descriptor_proto: Buffer[] };
  error_response?: { error_message: string };
}
type ReflectionStream = ClientDuplexStream<Record<string, string>, ReflectionResponse>;

/** Asks server reflection one question, as grpcurl does (grpc.reflection.v1). */
function reflect(address: string, request: Record<string, string>): Promise<ReflectionResponse> {
  const reflectionRoot = join(dirname(createRequire(import.meta.url).resolve('@grpc/reflection')), '..', 'proto');
  const definition = loadSync('grpc/reflection/v1/reflection.proto', { includeDirs: [reflectionRoot], keepCase: true });
  const grpcObject = loadPackageDefinition(definition) as unknown as {
    grpc: {
      reflection: {
        v1: {
          ServerReflection: new (
            address: string,
            creds: ReturnType<typeof credentials.createInsecure>,
          ) => { ServerReflectionInfo(): ReflectionStream; close(): void };
        };
      };
    };
  };
  const client = new grpcObject.grpc.reflection.v1.ServerReflection(address, credentials.createInsecure());
  return new Promise((resolve, reject) => {
    const stream = client.ServerReflectionInfo();
    stream.on('data', (response: ReflectionResponse) => {
      resolve(response);
      stream.end();
      client.close();
    });
    stream.on('error', reject);
    stream.write(request);
  });
}

describe('loom serve', () => {
  it('serves all six services: health SERVING for each name, reflection lists them', async () => {
    const loom = await serve();
    const rows = await checkHealth(loom.address);
    expect(rows).toEqual([{ service: '(server)', status: 'SERVING' }, ...loomServiceNames.map((service) => ({ service, status: 'SERVING' }))]);

    const listed = await reflect(loom.address, { list_services: '' });
    const names = listed.list_services_response?.service.map((service) => service.name) ?? [];
    expect(names).toEqual(expect.arrayContaining([...loomServiceNames]));

    const described = await reflect(loom.address, { file_containing_symbol: 'loom.v1.Secrets' });
    expect(described.file_descriptor_response?.file_descriptor_proto.length).toBeGreaterThan(0);
  });

  it('serves a subset with --services, and `loom health` says which are hosted', async () => {
    const loom = await serve(['--services', 'secrets,audit']);
    const result = await runCli(['health', '--address', loom.address, '--output', 'json']);
    expect(result.status).toBe(0);
    const report = JSON.parse(result.stdout) as { services: { service: string; status: string }[] };
    const byName = Object.fromEntries(report.services.map((row) => [row.service, row.status]));
    expect(byName).toMatchObject({ 'loom.v1.Secrets': 'SERVING', 'loom.v1.Audit': 'SERVING', 'loom.v1.Executor': 'NOT_HOSTED' });
  });

  // the binary, in a process of its own: SIGTERM and the exit code are the point
  it('ends an open stream cleanly on SIGTERM and exits 0', async () => {
    const loom = await startLoomProcess();
    processes.push(loom);
    const Health = makeGenericClientConstructor(healthDefinition, 'Health') as unknown as new (
      address: string,
      creds: ReturnType<typeof credentials.createInsecure>,
    ) => { Watch(request: { service: string }, metadata: Metadata): ClientReadableStream<{ status: string }>; close(): void };
    const health = new Health(loom.address, credentials.createInsecure());
    const stream = health.Watch({ service: 'loom.v1.Executor' }, new Metadata());
    const statuses: string[] = [];
    stream.on('data', (message: { status: string }) => statuses.push(message.status));
    const streamEnd = new Promise<StatusObject>((resolve) => stream.on('status', resolve));
    await expect.poll(() => statuses).toEqual(['SERVING']);

    loom.child.kill('SIGTERM');
    const status = await streamEnd;
    const exit = await loom.exited;
    health.close();
    expect(status.code).toBe(0);
    expect(statuses).toEqual(['SERVING', 'NOT_SERVING']);
    expect(exit).toEqual({ code: 0, signal: null });
    expect(loom.logLines.some((line) => line.includes('"msg":"stopped"'))).toBe(true);
  });
});

describe('loom command line', () => {
  it('prints its version', async () => {
    const result = await runCli(['--version']);
    expect(result.status).toBe(0);
    expect(result.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
  });

  // `loom serve` refusals on the binary: its exit code, and a refusal that failed to refuse would serve in this process
  it.each([
    [['serve', '--bogus'], /unknown option '--bogus'/],
    [['serve', '--config', '/nonexistent/loom.yaml'], /\/nonexistent\/loom\.yaml/],
    [['serve', '--set', 'server.port=abc'], /server\.port/],
    [['serve', '--set', 'loom.security.audit.enabled=yes'], /loom\.security\.audit\.enabled/],
    [['serve', '--services', 'secrets,frobnicator'], /unknown service 'frobnicator'/],
  ])('refuses %j with one clear line and a non-zero exit', (args, message) => {
    const result = runLoomBinary(args);
    expect(result.status).not.toBe(0);
    const lines = result.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(message);
  });

  it.each([
    [['--output', 'yaml', 'health'], /--output/],
    [['frobnicate'], /unknown command 'frobnicate'/],
  ])('refuses %j with one clear line and a non-zero exit, in process', async (args, message) => {
    const result = await runCli(args);
    expect(result.status).not.toBe(0);
    const lines = result.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(message);
  });

  it('refuses a bad environment value naming the key', () => {
    const result = runLoomBinary(['serve'], { SERVER_PORT: 'eighty' });
    expect(result.status).toBe(2);
    expect(result.stderr).toMatch(/server\.port.*SERVER_PORT/);
  });

  it('reports an unreachable loom from `loom health` with exit code 1', async () => {
    const result = await runCli(['health', '--address', '127.0.0.1:1']);
    expect(result.status).toBe(1);
    expect(result.stdout).toMatch(/UNREACHABLE/);
  });
});

// Issue 49 (loud failures): a port loom cannot bind stops what was starting with one line naming the setting to change.
// One real listener holds a port that every case asks for. A webhook's taken port (a workflow's start) is in
// executor.test.ts, beside its running loom.
describe('a port loom cannot bind', () => {
  let blocker: Server;
  let taken: number;
  beforeAll(async () => {
    blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    taken = (blocker.address() as { port: number }).port;
  });
  afterAll(async () => {
    await new Promise((resolve) => blocker.close(resolve));
  });

  // the binary, in a process of its own: its exit code and its standard error are the point
  it.each(['loom.telemetry.prometheus.port', 'server.port'])('stops `loom serve` when %s is taken: one line naming it, exit code 1', (setting) => {
    const result = runLoomBinary([
      'serve',
      '--services',
      'audit',
      '--set',
      'server.port=0',
      '--set',
      'loom.telemetry.prometheus.port=0',
      '--set',
      `${setting}=${taken}`,
    ]);
    expect(result.stderr).toBe(`loom: ${setting} ${taken} is in use (EADDRINUSE): set ${setting} to a free port\n`);
    expect(result.status).toBe(1);
    // nothing serves: the log never says it listens, nor names a scrape URL
    expect(result.stdout).not.toMatch(/loom listening/);
  });

  it('stops the start when the gRPC port is taken, naming server.port', async () => {
    const failure = startLoom(['--services', 'audit', '--set', `server.port=${taken}`]);
    await expect(failure).rejects.toThrow(`server.port ${taken} is in use (EADDRINUSE): set server.port to a free port`);
    await expect(failure).rejects.toMatchObject({ name: 'ListenError', kind: 'failed-precondition', setting: 'server.port', port: taken });
  });

  it('stops `loom serve --with-skills` and `loom skills serve` when a skill port is taken, naming the flag', async () => {
    const beside = startLoom(['--services', 'audit', '--with-skills', 'web-data', '--skill-port', `web-data=${taken}`]);
    await expect(beside).rejects.toThrow(`--skill-port web-data ${taken} is in use (EADDRINUSE): set --skill-port web-data to a free port`);

    const alone = await runCli(['skills', 'serve', '--only', 'web-data,pdf', '--port', `web-data=${taken}`, '--port', 'pdf=0']);
    expect(alone).toMatchObject({ status: 1, stderr: `loom: --port web-data ${taken} is in use (EADDRINUSE): set --port web-data to a free port\n` });
  });
});
