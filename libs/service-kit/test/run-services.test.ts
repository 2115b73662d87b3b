import { type ServiceError, status } from '@grpc/grpc-js';
import { AuditClient, AuditService, SecretsClient, SecretsService } from '@loom/contracts';
import { loadConfig } from '@loom/config';
import { startTelemetry, type Telemetry } from '@loom/telemetry';
import { clientTracingInterceptor } from '@loom/telemetry/grpc';
import { context, SpanKind, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import {
  call,
  createClient,
  refusedServiceCall,
  type RunningServices,
  type ServiceClients,
  type ServiceModule,
  startServices,
  unimplemented,
} from '../src/index.js';
import { capturedLogger } from '../src/testing.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Secrets answers ListVariables and remembers who called. */
function secretsModule(callers: (string | undefined)[]): ServiceModule {
  return {
    name: 'secrets',
    fullName: 'loom.v1.Secrets',
    configSections: [],
    create: () =>
      Promise.resolve({
        addToServer(server) {
          server.addService('loom.v1.Secrets', SecretsService, {
            ...unimplemented(SecretsService, {} as never),
            listVariables: (_request, callContext) => {
              callers.push(callContext.identity);
              return Promise.resolve({ variables: [], nextPageToken: '' });
            },
          });
        },
        close: () => Promise.resolve(),
      }),
  };
}

/** Audit's Verify calls Secrets over gRPC through the clients the kit gives it. */
const auditModule: ServiceModule = {
  name: 'audit',
  fullName: 'loom.v1.Audit',
  configSections: [],
  create: ({ clients }) =>
    Promise.resolve({
      addToServer(server) {
        server.addService('loom.v1.Audit', AuditService, {
          ...unimplemented(AuditService, {} as never),
          verify: async () => {
            await call(clients.get('secrets'), 'listVariables', { pageSize: 0, pageToken: '' });
            return { ok: true, eventsChecked: 0, firstBrokenSequence: 0, problem: '' };
          },
        });
      },
      close: () => Promise.resolve(),
    }),
};

async function start(callers: (string | undefined)[]): Promise<{ running: RunningServices; exporter: InMemorySpanExporter; telemetry: Telemetry }> {
  const exporter = new InMemorySpanExporter();
  const telemetry = startTelemetry({ serviceName: 'loom-test', spanProcessors: [new SimpleSpanProcessor(exporter)] });
  cleanups.push(() => telemetry.shutdown());
  const config = loadConfig({
    env: {},
    overrides: ['server.port=0', 'loom.telemetry.prometheus.port=0', 'loom.auth.allowAnonymous=true', 'loom.auth.roles.audit=editor'],
  });
  const running = await startServices({ config, modules: [secretsModule(callers), auditModule], logger: capturedLogger().logger });
  cleanups.push(() => running.stop());
  return { running, exporter, telemetry };
}

describe('services in one process', () => {
  it('carry one trace from a client through two services, over gRPC, with the caller identity', async () => {
    const callers: (string | undefined)[] = [];
    const { running, exporter, telemetry } = await start(callers);
    const audit = createClient(AuditClient, `127.0.0.1:${running.port}`, { interceptors: [clientTracingInterceptor()] });
    cleanups.push(() => audit.close());

    const root = telemetry.tracer.startSpan('test request');
    await context.with(trace.setSpan(context.active(), root), () => call(audit, 'verify', {}));
    root.end();

    expect(callers).toEqual(['audit']);
    await expect.poll(() => exporter.getFinishedSpans().length).toBeGreaterThanOrEqual(5);
    const spans = exporter.getFinishedSpans();
    const find = (name: string, kind: SpanKind) => {
      const span = spans.find((s) => s.name === name && s.kind === kind);
      expect(span, `${SpanKind[kind]} span ${name}`).toBeDefined();
      return span!;
    };
    const auditClient = find('loom.v1.Audit/Verify', SpanKind.CLIENT);
    const auditServer = find('loom.v1.Audit/Verify', SpanKind.SERVER);
    const secretsClient = find('loom.v1.Secrets/ListVariables', SpanKind.CLIENT);
    const secretsServer = find('loom.v1.Secrets/ListVariables', SpanKind.SERVER);

    const traceId = root.spanContext().traceId;
    for (const span of [auditClient, auditServer, secretsClient, secretsServer]) expect(span.spanContext().traceId).toBe(traceId);
    expect(auditClient.parentSpanContext?.spanId).toBe(root.spanContext().spanId);
    expect(auditServer.parentSpanContext?.spanId).toBe(auditClient.spanContext().spanId);
    expect(secretsClient.parentSpanContext?.spanId).toBe(auditServer.spanContext().spanId);
    expect(secretsServer.parentSpanContext?.spanId).toBe(secretsClient.spanContext().spanId);
    expect(secretsServer.attributes).toMatchObject({ 'rpc.system': 'grpc', 'rpc.service': 'loom.v1.Secrets', 'rpc.method': 'ListVariables' });
  });
});

describe('shutdown', () => {
  it('lets a service finish its own work first, calling another service of the process in memory, then closes the services', async () => {
    const callers: (string | undefined)[] = [];
    const steps: string[] = [];
    // the executor's part: at shutdown its runs stop and are audited, a call to another service of the process
    const worker: ServiceModule = {
      name: 'audit',
      fullName: 'loom.v1.Audit',
      configSections: [],
      create: ({ clients }) =>
        Promise.resolve({
          addToServer: () => undefined,
          quiesce: async () => {
            steps.push('quiesce');
            await call(clients.get('secrets'), 'listVariables', { pageSize: 0, pageToken: '' });
            steps.push('called secrets');
          },
          close: () => {
            steps.push('close');
            return Promise.resolve();
          },
        }),
    };
    const config = loadConfig({ env: {}, overrides: ['server.port=0', 'loom.telemetry.prometheus.port=0', 'loom.auth.roles.audit=editor'] });
    const running = await startServices({ config, modules: [secretsModule(callers), worker], logger: capturedLogger().logger });
    await running.stop();
    expect(steps).toEqual(['quiesce', 'called secrets', 'close']);
    expect(callers).toEqual(['audit']);
    expect(running.server.state).toBe('stopped');
  });
});

describe('configuration slices', () => {
  it('gives each service only the configuration sections it declares', async () => {
    const seen: string[][] = [];
    const module: ServiceModule<'scheduler' | 'security'> = {
      name: 'scheduler',
      fullName: 'loom.v1.Scheduler',
      configSections: ['scheduler', 'security'],
      create: ({ config }) => {
        seen.push(Object.keys(config).sort());
        return Promise.resolve({ addToServer: () => undefined, close: () => Promise.resolve() });
      },
    };
    const config = loadConfig({ env: {}, overrides: ['server.port=0', 'loom.telemetry.prometheus.port=0'] });
    const running = await startServices({ config, modules: [module], logger: capturedLogger().logger });
    cleanups.push(() => running.stop());
    expect(seen).toEqual([['scheduler', 'security']]);
  });
});

describe('services in two processes', () => {
  /** The secrets service alone, and the audit service in a "process" of its own calling it, each with its own settings. */
  async function split(secretsSettings: readonly string[], auditSettings: readonly string[]): Promise<AuditClient> {
    const common = ['server.port=0', 'loom.telemetry.prometheus.port=0', 'loom.auth.allowAnonymous=true', 'loom.auth.roles.audit=editor'];
    const secrets = await startServices({
      config: loadConfig({ env: {}, overrides: [...common, ...secretsSettings] }),
      modules: [secretsModule([])],
      logger: capturedLogger().logger,
    });
    cleanups.push(() => secrets.stop());
    const audit = await startServices({
      config: loadConfig({ env: {}, overrides: [...common, `loom.services.secrets.address=127.0.0.1:${secrets.port}`, ...auditSettings] }),
      modules: [auditModule],
      logger: capturedLogger().logger,
    });
    cleanups.push(() => audit.stop());
    const client = createClient(AuditClient, `127.0.0.1:${audit.port}`, { retry: false });
    cleanups.push(() => client.close());
    return client;
  }

  it('call each other with the token both have for the calling identity', async () => {
    const client = await split(['loom.auth.tokens.audit=audit-token-0123456789'], ['loom.auth.tokens.audit=audit-token-0123456789']);
    await expect(call(client, 'verify', {})).resolves.toMatchObject({ ok: true });
  });

  it("tell a refused call between them by the calling identity and the setting, not as the caller's own token", async () => {
    // the audit process has no token for itself (a random one), as a split deployment without loom.auth.tokens.audit
    const client = await split(['loom.auth.tokens.audit=audit-token-0123456789'], []);
    const refused = await call(client, 'verify', {}).catch((error: unknown) => error as ServiceError);
    expect(refused).toMatchObject({
      code: status.FAILED_PRECONDITION,
      details:
        "the audit service's call to the secrets service was refused (UNAUTHENTICATED: invalid bearer token): " +
        "set loom.auth.tokens.audit to the same token in the audit service's process and in the secrets service's",
    });
    expect(refusedServiceCall('executor', 'config-store', 'UNAUTHENTICATED: invalid bearer token')).toBe(
      "the executor's call to the config store was refused (UNAUTHENTICATED: invalid bearer token): " +
        "set loom.auth.tokens.executor to the same token in the executor's process and in the config store's",
    );
  });
});

describe('calls between services of one process', () => {
  /** Secrets whose ListVariables records who called and, given `hold`, answers only once its call is cancelled. */
  function heldSecrets(callers: (string | undefined)[], cancelled: string[], hold: boolean, restrict?: readonly string[]): ServiceModule {
    return {
      name: 'secrets',
      fullName: 'loom.v1.Secrets',
      configSections: [],
      create: () =>
        Promise.resolve({
          addToServer(server) {
            server.addService(
              'loom.v1.Secrets',
              SecretsService,
              {
                ...unimplemented(SecretsService, {} as never),
                listVariables: (_request, callContext) => {
                  callers.push(callContext.identity);
                  if (!hold) return Promise.resolve({ variables: [], nextPageToken: '' });
                  return new Promise((_resolve, reject) => {
                    callContext.signal.addEventListener('abort', () => {
                      cancelled.push(String(callContext.identity));
                      reject(new Error('cancelled'));
                    });
                  });
                },
              },
              restrict === undefined ? {} : { restrict: { listVariables: restrict } },
            );
          },
          close: () => Promise.resolve(),
        }),
    };
  }

  /** The audit service, whose clients (its identity's) the test calls with. */
  function auditWithClients(): { module: ServiceModule; clients: () => ServiceClients } {
    let kept: ServiceClients | undefined;
    return {
      module: {
        name: 'audit',
        fullName: 'loom.v1.Audit',
        configSections: [],
        create: ({ clients }) => {
          kept = clients;
          return Promise.resolve({ addToServer: () => undefined, close: () => Promise.resolve() });
        },
      },
      clients: () => kept as ServiceClients,
    };
  }

  async function oneProcess(secrets: ServiceModule, extra: readonly string[] = []) {
    const exporter = new InMemorySpanExporter();
    const telemetry = startTelemetry({ serviceName: 'loom-test', spanProcessors: [new SimpleSpanProcessor(exporter)] });
    cleanups.push(() => telemetry.shutdown());
    const audit = auditWithClients();
    const overrides = ['server.port=0', 'loom.telemetry.prometheus.port=0', 'loom.auth.roles.audit=editor', ...extra];
    const running = await startServices({ config: loadConfig({ env: {}, overrides }), modules: [secrets, audit.module], logger: capturedLogger().logger });
    cleanups.push(() => running.stop());
    return { running, exporter, telemetry, secretsClient: audit.clients().get('secrets') };
  }

  it('run in memory, with the calling identity and its trace as over gRPC (the same call to this process over its port)', async () => {
    const callers: (string | undefined)[] = [];
    const token = 'audit-token-0123456789';
    const { running, exporter, telemetry, secretsClient } = await oneProcess(heldSecrets(callers, [], false), [`loom.auth.tokens.audit=${token}`]);
    // the same identity's call over the port, as `loom.services.secrets.address` pointing at this process would make it
    const overGrpc = createClient(SecretsClient, `127.0.0.1:${running.port}`, { token, interceptors: [clientTracingInterceptor()], retry: false });
    cleanups.push(() => overGrpc.close());

    const traced = async (client: SecretsClient) => {
      const root = telemetry.tracer.startSpan('test request');
      await context.with(trace.setSpan(context.active(), root), () => call(client, 'listVariables', { pageSize: 0, pageToken: '' }));
      root.end();
      await expect.poll(() => exporter.getFinishedSpans().filter((span) => span.parentSpanContext?.spanId === root.spanContext().spanId).length).toBe(1);
      const spans = exporter.getFinishedSpans().filter((span) => span.spanContext().traceId === root.spanContext().traceId);
      const clientSpan = spans.find((span) => span.kind === SpanKind.CLIENT && span.parentSpanContext?.spanId === root.spanContext().spanId);
      await expect.poll(() => exporter.getFinishedSpans().some((span) => span.parentSpanContext?.spanId === clientSpan?.spanContext().spanId)).toBe(true);
      return exporter.getFinishedSpans().find((span) => span.kind === SpanKind.SERVER && span.parentSpanContext?.spanId === clientSpan?.spanContext().spanId);
    };
    const inMemory = await traced(secretsClient);
    expect(running.server.local.callsServed).toBe(1);
    const overPort = await traced(overGrpc);
    expect(running.server.local.callsServed).toBe(1);

    expect(callers).toEqual(['audit', 'audit']);
    for (const server of [inMemory, overPort]) {
      expect(server?.name).toBe('loom.v1.Secrets/ListVariables');
      expect(server?.attributes).toMatchObject({ 'rpc.system': 'grpc', 'rpc.service': 'loom.v1.Secrets', 'rpc.grpc.status_code': status.OK });
    }
    // in memory there is no socket, so no peer address: that tells the two paths apart
    expect(inMemory?.attributes['network.peer.address']).toBeUndefined();
    expect(overPort?.attributes['network.peer.address']).toBe('127.0.0.1');
  });

  it("end at the caller's deadline with DEADLINE_EXCEEDED and cancel the handler, as over gRPC", async () => {
    const cancelled: string[] = [];
    const { running, secretsClient } = await oneProcess(heldSecrets([], cancelled, true));
    const late = await call(secretsClient, 'listVariables', { pageSize: 0, pageToken: '' }, { deadlineMs: 50 }).catch(
      (error: unknown) => error as ServiceError,
    );
    expect(late).toMatchObject({ code: status.DEADLINE_EXCEEDED });
    await expect.poll(() => cancelled).toEqual(['audit']);
    expect(running.server.local.callsServed).toBe(1);
  });

  it("apply the permission table: a restricted RPC refuses another identity, told as the caller's setting", async () => {
    const callers: (string | undefined)[] = [];
    const { secretsClient } = await oneProcess(heldSecrets(callers, [], false, ['executor']));
    const refused = await call(secretsClient, 'listVariables', { pageSize: 0, pageToken: '' }).then(
      () => undefined,
      (error: unknown) => error as ServiceError,
    );
    expect(refused).toMatchObject({ code: status.FAILED_PRECONDITION });
    expect(refused?.details).toMatch(/^the audit service's call to the secrets service was refused \(PERMISSION_DENIED: identity 'audit' may not call/);
    expect(callers).toEqual([]);
  });

  it('are refused UNAVAILABLE once the server stopped, as over its closed port', async () => {
    const callers: (string | undefined)[] = [];
    const { running, secretsClient } = await oneProcess(heldSecrets(callers, [], false));
    await running.stop();
    cleanups.pop();
    await expect(call(secretsClient, 'listVariables', { pageSize: 0, pageToken: '' })).rejects.toMatchObject({ code: status.UNAVAILABLE });
    expect(callers).toEqual([]);
  });
});
