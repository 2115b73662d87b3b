import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { auditModule } from '@loom/audit';
import { AuditClient, type AuditEventType, SecretsClient, WorkflowStoreClient } from '@loom/contracts';
import { parseWorkflowJson, type WorkflowConfiguration } from '@loom/domain';
import { call, createClient, type RunningServices } from '@loom/service-kit';
import { capturedLogger, serveForTest } from '@loom/service-kit/testing';
import { secretsModule } from '@loom/secrets';
import { configStoreModule } from '../src/index.js';

export const storeToken = 'config-store-token-0123456789ab';
export const executorToken = 'executor-token-0123456789abcdef';

/** Scratch directories of one test run. */
export interface Scratch {
  readonly root: string;
  /** Storage root of the config store (`loom.datasource.filesystemRoot`). */
  readonly workflows: string;
  readonly pgdata: string;
  readonly keyRingFile: string;
  readonly auditLog: string;
}

export function scratch(): Scratch {
  const root = mkdtempSync(join(tmpdir(), 'loom-config-store-'));
  return { root, workflows: join(root, 'workflows'), pgdata: join(root, 'pgdata'), keyRingFile: join(root, 'keyring.json'), auditLog: join(root, 'audit.log') };
}

/** The config store with a real secrets service in one process, on a free loopback port, with clients. */
export interface StoreHarness {
  readonly running: RunningServices;
  readonly address: string;
  readonly store: WorkflowStoreClient;
  readonly secrets: SecretsClient;
  /** Reads the audit log of the process's audit service (or of `loom.services.audit.address`). */
  readonly audit: AuditClient;
  readonly logLines: string[];
  stop(): Promise<void>;
}

/** Config overrides that put every file of a run under `dirs`. */
export function overridesFor(dirs: Scratch, extra: readonly string[] = []): string[] {
  return [
    `loom.datasource.filesystemRoot=${dirs.workflows}`,
    `loom.embedded.postgres.dataDir=${dirs.pgdata}`,
    `loom.secrets.keyRingFile=${dirs.keyRingFile}`,
    `loom.security.audit.log.path=${dirs.auditLog}`,
    `loom.auth.tokens.config-store=${storeToken}`,
    `loom.auth.tokens.executor=${executorToken}`,
    ...extra,
  ];
}

export async function startStore(
  dirs: Scratch,
  extra: readonly string[] = [],
  modules = [secretsModule, auditModule, configStoreModule],
): Promise<StoreHarness> {
  const { logger, lines: logLines } = capturedLogger();
  const running = await serveForTest(modules, overridesFor(dirs, extra), { logger });
  const address = `127.0.0.1:${running.port}`;
  const store = createClient(WorkflowStoreClient, address, { retry: false });
  const secrets = createClient(SecretsClient, address, { retry: false });
  const auditAddress = extra.find((entry) => entry.startsWith('loom.services.audit.address='))?.split('=')[1] ?? address;
  const audit = createClient(AuditClient, auditAddress, { retry: false });
  return {
    running,
    address,
    store,
    secrets,
    audit,
    logLines,
    async stop() {
      store.close();
      secrets.close();
      audit.close();
      await running.stop();
    },
  };
}

const fixture = readFileSync(new URL('../../../libs/domain/test/fixtures/graph-writer.workflow.json', import.meta.url), 'utf8');

/** The shared graph-writer fixture (inlet → graph database writer with a Neo4j resource), renamed and with a password. */
export function graphWorkflow(name: string, password: string): WorkflowConfiguration {
  const workflow = parseWorkflowJson(fixture);
  const resources = [
    ...workflow.resources,
    ...workflow.workflowResources,
    ...workflow.components.flatMap((component) => (component.resource ? [component.resource] : [])),
  ];
  for (const resource of resources) {
    if ('password' in resource.parameters) resource.parameters.password = password;
  }
  return { ...workflow, name };
}

/** The audit events of the given types, oldest first. */
export async function auditedEvents(audit: AuditClient, types: readonly AuditEventType[]) {
  return (await call(audit, 'query', { types: [...types], workflowName: '', since: undefined, until: undefined, pageSize: 0, pageToken: '' })).events;
}

/** Every file under a storage root, kept versions (`.history/<stem>/...`) included, as paths relative to it, sorted. */
export function storedFiles(directory: string): string[] {
  return readdirSync(directory, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name).slice(directory.length + 1))
    .sort();
}

export { failure } from '@loom/service-kit/testing';
export { status };

/** The services the store's tests start beside it (startStore's defaults). */
export { auditModule, secretsModule };
