import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { auditModule } from '@loom/audit';
import { AuditClient, type AuditEventType, SecretsClient, type Workflow, WorkflowStoreService } from '@loom/contracts';
import { collectSecretSlots, isSealed, needsSealing, parseWorkflow } from '@loom/domain';
import { workflowFromProto, workflowToProto } from '@loom/domain/proto';
import { call, createClient, type RunningServices, type ServiceModule, unimplemented } from '@loom/service-kit';
import { capturedLogger, serveForTest } from '@loom/service-kit/testing';
import { type Logger } from '@loom/telemetry';
import pg from 'pg';
import { createScratchDatabase, type ScratchDatabase } from '@loom/postgres/testing';
import { secretsModule } from '../src/index.js';

export const executorToken = 'executor-token-0123456789abcdef';
export const storeToken = 'config-store-token-0123456789ab';

/** Where the variables live in a test run: the embedded PGlite, or a fresh database on the real server. */
export interface Backend {
  readonly name: string;
  /** Config overrides selecting the database. */
  overrides(): Promise<string[]>;
  cleanup(): Promise<void>;
}

/** The embedded default: PGlite on a temp data directory, reached through its loopback port. */
export function embeddedBackend(): Backend {
  const dataDir = join(mkdtempSync(join(tmpdir(), 'loom-secrets-')), 'pgdata');
  return {
    name: 'embedded PGlite',
    overrides: () => Promise.resolve([`loom.embedded.postgres.dataDir=${dataDir}`]),
    cleanup: () => Promise.resolve(),
  };
}

/** A fresh database on the real PostgreSQL of LOOM_TEST_DATABASE_URL, dropped afterwards. */
export function realBackend(adminUrl: string): Backend {
  let database: ScratchDatabase | undefined;
  return {
    name: 'PostgreSQL server',
    async overrides() {
      database = await createScratchDatabase(adminUrl, 'loom_secrets_test');
      return [`loom.secrets.database.url=${database.url}`];
    },
    cleanup: async () => {
      await database?.drop();
    },
  };
}

/** A running secrets service with clients for three identities and everything it logged. */
export interface SecretsHarness {
  readonly running: RunningServices;
  readonly anonymous: SecretsClient;
  readonly executor: SecretsClient;
  readonly configStore: SecretsClient;
  /** Reads the audit log of the process's audit service. */
  readonly audit: AuditClient;
  readonly logLines: string[];
  readonly keyRingFile: string;
  /** Runs SQL on the service's database, as an operator with psql would (trust auth on loopback). */
  query<R extends pg.QueryResultRow>(sql: string, params?: unknown[]): Promise<R[]>;
  stop(): Promise<void>;
}

/** How often the fake config store was asked to re-seal the stored workflows. */
export const resealCalls = { count: 0 };

/**
 * A hand-written config store that answers ResealWorkflows only (with no stored workflows), for RotateKey to call: the
 * real one is another service's code. Its other RPCs are UNIMPLEMENTED.
 */
const fakeConfigStore: ServiceModule = {
  name: 'config-store',
  fullName: 'loom.v1.WorkflowStore',
  configSections: [],
  create: () =>
    Promise.resolve({
      addToServer(server) {
        server.addService('loom.v1.WorkflowStore', WorkflowStoreService, {
          ...unimplemented(WorkflowStoreService, {} as never),
          resealWorkflows: () => {
            resealCalls.count++;
            return Promise.resolve({ workflowsResealed: 0, workflowsCurrent: 0, workflowsLeft: [] });
          },
        });
      },
      close: () => Promise.resolve(),
    }),
};

/** Starts the secrets service alone on a free port over the backend (with the audit service and a fake config store). */
export async function startSecrets(
  backend: Backend,
  options: { keyRingFile?: string; extraOverrides?: string[]; logger?: Logger; withoutAudit?: boolean } = {},
): Promise<SecretsHarness> {
  const keyRingFile = options.keyRingFile ?? join(mkdtempSync(join(tmpdir(), 'loom-keys-')), 'keyring.json');
  const captured = capturedLogger();
  const logLines = captured.lines;
  const logger = options.logger ?? captured.logger;
  const running = await serveForTest(
    options.withoutAudit === true ? [secretsModule, fakeConfigStore] : [secretsModule, auditModule, fakeConfigStore],
    [
      ...(await backend.overrides()),
      `loom.secrets.keyRingFile=${keyRingFile}`,
      `loom.security.audit.log.path=${join(dirname(keyRingFile), 'audit.log')}`,
      `loom.auth.tokens.executor=${executorToken}`,
      `loom.auth.tokens.config-store=${storeToken}`,
      ...(options.extraOverrides ?? []),
    ],
    { logger },
  );
  const address = `127.0.0.1:${running.port}`;
  const client = (token?: string): SecretsClient => createClient(SecretsClient, address, { retry: false, ...(token === undefined ? {} : { token }) });
  const clients = { anonymous: client(), executor: client(executorToken), configStore: client(storeToken) };
  const auditAddress = options.extraOverrides?.find((entry) => entry.startsWith('loom.services.audit.address='))?.split('=')[1] ?? address;
  const audit = createClient(AuditClient, auditAddress, { retry: false });
  const described = await call(clients.anonymous, 'describeStorage', {});
  return {
    running,
    ...clients,
    audit,
    logLines,
    keyRingFile,
    async query<R extends pg.QueryResultRow>(sql: string, params: unknown[] = []) {
      const connection = new pg.Client({ connectionString: `postgresql://postgres@${described.address}/${described.database}` });
      await connection.connect();
      try {
        return (await connection.query<R>(sql, params)).rows;
      } finally {
        await connection.end();
      }
    },
    async stop() {
      for (const c of Object.values(clients)) c.close();
      audit.close();
      await running.stop();
    },
  };
}

/** A workflow whose graph database resource takes its password from `$$<variable>`. */
export function graphWorkflow(password: unknown, extraParameters: Record<string, unknown> = {}): Workflow {
  const parameterTypes = { host: 'STRING', port: 'INTEGER', user: 'STRING', password: 'PASSWORD', database: 'STRING', read_only: 'BOOLEAN' };
  return workflowToProto(
    parseWorkflow({
      name: 'Knowledge graph_0c8e5a4f-2d71-4b39-a6e2-91f3d7b05c48',
      autoStart: false,
      components: [],
      links: [],
      resources: [
        {
          name: 'Neo4j_7d1f2a90-4c3b-4e5f-8a6b-1c2d3e4f5a6b',
          resource: {
            qualifiedName: 'loom.resources.graph.Neo4jDatabase',
            name: 'Neo4j Database',
            parameters: Object.entries(parameterTypes).map(([name, type]) => ({ name, type, required: name !== 'port' })),
            group: 'DATABASES',
            experimental: false,
          },
          parameters: { host: 'neo4j.internal', port: 7687, user: 'loom', password, database: 'neo4j', read_only: false, ...extraParameters },
        },
      ],
      skills: [],
      workflowResources: [],
    }),
  );
}

/** Seals a workflow's secret slots through SealConfiguration, as the config store does, and answers the sealed workflow. */
export async function sealVia(client: SecretsClient, workflow: Workflow): Promise<{ workflow: Workflow }> {
  const configuration = workflowFromProto(workflow);
  const collected = collectSecretSlots(configuration, needsSealing);
  const { slots } = await call(client, 'sealConfiguration', { workflow: undefined, slots: collected.slots, workflowName: configuration.name });
  collected.apply(slots, 'secrets service');
  return { workflow: workflowToProto(configuration) };
}

/** Opens a workflow's sealed slots through DecryptResources, as the executor does, and answers the opened workflow. */
export async function openVia(client: SecretsClient, workflow: Workflow | undefined): Promise<{ workflow: Workflow }> {
  const configuration = workflowFromProto(workflow as Workflow);
  const collected = collectSecretSlots(configuration, (slot) => isSealed(slot.value));
  const { slots } = await call(client, 'decryptResources', { workflow: undefined, slots: collected.slots, workflowName: configuration.name });
  collected.apply(slots, 'secrets service');
  return { workflow: workflowToProto(configuration) };
}

/** The audit events of the given types, oldest first. */
export async function auditedEvents(audit: AuditClient, types: readonly AuditEventType[]) {
  return (await call(audit, 'query', { types: [...types], workflowName: '', since: undefined, until: undefined, pageSize: 0, pageToken: '' })).events;
}

export { failure } from '@loom/service-kit/testing';
export { status };

/** The audit service the secrets tests start beside it. */
export { auditModule };
