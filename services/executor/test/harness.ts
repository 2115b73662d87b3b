import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { auditModule } from '@loom/audit';
import { configStoreModule } from '@loom/config-store';
import { AuditClient, type AuditEvent, AuditEventType, ExecutorClient, SkillGatewayClient, WorkflowStoreClient } from '@loom/contracts';
import { COMPONENT_KINDS, type WorkflowConfiguration } from '@loom/domain';
import { secretsModule } from '@loom/secrets';
import { createSkillGatewayInstance, type SkillGatewayTestHooks, skillGatewayModule } from '@loom/skill-gateway';
import { call, type ClientOptions, createClient, type RunningServices, type ServiceModule } from '@loom/service-kit';
import { capturedLogger, serveForTest } from '@loom/service-kit/testing';
import { executorModule } from '../src/index.js';
import { instance, workflowOf } from './workflows.js';

export { instance, workflowOf };

export const executorToken = 'executor-token-0123456789abcdef';

/** The executor with real secrets, config store and audit services in one process, and clients to them. */
export interface ExecutorHarness {
  readonly running: RunningServices;
  /** Directory of the stored workflow files (when the harness keeps the state in its temp directory). */
  readonly workflowsDir: string;
  readonly executor: ExecutorClient;
  readonly store: WorkflowStoreClient;
  /** Presents the executor's identity, which may read the audit log. */
  readonly audit: AuditClient;
  readonly skills: SkillGatewayClient;
  readonly logLines: string[];
  /** Log lines parsed as JSON. */
  logged(): Record<string, unknown>[];
  stop(): Promise<void>;
}

/** Where the harness keeps loom's state: by default a temp directory of its own. */
export interface HarnessState {
  /** `--set` values placing the state; `[]` leaves every state key at its default (inside `./.loom`). */
  readonly overrides?: readonly string[];
  readonly configFile?: string;
  readonly env?: NodeJS.ProcessEnv;
  /** More services in the same process (the scheduler, to test it against the real executor). */
  readonly modules?: readonly ServiceModule[];
  /** What the skill gateway takes from the test (the clock its circuits read). */
  readonly skillGateway?: SkillGatewayTestHooks;
  /** How the harness's clients reach the server when it serves TLS (`loom.tls.*` in the overrides): credentials and channel options. */
  readonly clientOptions?: Pick<ClientOptions, 'credentials' | 'channelOptions'>;
}

export async function startExecutor(extra: readonly string[] = [], state: HarnessState = {}): Promise<ExecutorHarness> {
  const root = mkdtempSync(join(tmpdir(), 'loom-executor-'));
  const { logger, lines: logLines } = capturedLogger();
  const hooks = state.skillGateway;
  const skillGateway: typeof skillGatewayModule =
    hooks === undefined ? skillGatewayModule : { ...skillGatewayModule, create: (context) => createSkillGatewayInstance(context, hooks) };
  const running = await serveForTest(
    [secretsModule, configStoreModule, auditModule, skillGateway, executorModule, ...(state.modules ?? [])],
    [
      ...(state.overrides ?? [
        `loom.datasource.filesystemRoot=${join(root, 'workflows')}`,
        `loom.embedded.postgres.dataDir=${join(root, 'pgdata')}`,
        `loom.embedded.graph.dataDir=${join(root, 'graphdata')}`,
        `loom.secrets.keyRingFile=${join(root, 'keyring.json')}`,
        `loom.security.audit.log.path=${join(root, 'audit.log')}`,
        `loom.scheduler.stateFile=${join(root, 'scheduler-state.json')}`,
      ]),
      `loom.auth.tokens.executor=${executorToken}`,
      'loom.auth.allowAnonymous=true',
      'loom.experimental.enabled=true',
      // no warm Python interpreters made in the background of every test's executor (warm-interpreters.test.ts tests them)
      'loom.scripts.python.warmInterpreters=0',
      ...extra,
    ],
    { logger, ...(state.configFile === undefined ? {} : { configFile: state.configFile }), ...(state.env === undefined ? {} : { env: state.env }) },
  );
  const address = `127.0.0.1:${running.port}`;
  const clientOptions = state.clientOptions ?? {};
  const executor = createClient(ExecutorClient, address, { retry: false, ...clientOptions });
  const store = createClient(WorkflowStoreClient, address, { retry: false, ...clientOptions });
  const audit = createClient(AuditClient, address, { retry: false, token: executorToken, ...clientOptions });
  const skills = createClient(SkillGatewayClient, address, { retry: false, ...clientOptions });
  return {
    running,
    workflowsDir: join(root, 'workflows'),
    executor,
    store,
    audit,
    skills,
    logLines,
    logged: () => logLines.map((line) => JSON.parse(line) as Record<string, unknown>),
    async stop() {
      executor.close();
      store.close();
      audit.close();
      skills.close();
      await running.stop();
      // the embedded PostgreSQL's data alone is about 40 MB: a suite that leaves its directories fills a disk in days
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/** Instance names of the article pipeline. */
export const PIPELINE = {
  inlet: 'Articles_5b2f9c1e-7a34-4d8b-b0e6-2c91a4f7d360',
  transformer: 'Clean up_1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d',
  filter: 'Long enough_3c4d5e6f-7a8b-4c9d-8e0f-1a2b3c4d5e6f',
  sink: 'Log_4d5e6f7a-8b9c-4d0e-9f1a-2b3c4d5e6f7a',
} as const;

export const TRANSFORM = 'return { ...body, title: String(body.title).toUpperCase(), words: String(body.text).split(" ").length };';
export const FILTER = 'return body.words > 3;';

/** inlet → JavaScript transformer → JavaScript filter → logger. */
export function pipelineWorkflow(name = 'Article pipeline_6e7f8a9b-0c1d-4e2f-8a3b-4c5d6e7f8a9b'): WorkflowConfiguration {
  return workflowOf(
    name,
    [
      instance(COMPONENT_KINDS.INLET, PIPELINE.inlet),
      instance(COMPONENT_KINDS.MESSAGE_TRANSFORMER, PIPELINE.transformer, { script: TRANSFORM, language: 'javascript' }),
      instance(COMPONENT_KINDS.MESSAGE_FILTER, PIPELINE.filter, { script: FILTER, language: 'javascript' }),
      instance(COMPONENT_KINDS.LOGGER, PIPELINE.sink, { level: 'info' }),
    ],
    [
      [PIPELINE.inlet, PIPELINE.transformer],
      [PIPELINE.transformer, PIPELINE.filter],
      [PIPELINE.filter, PIPELINE.sink],
    ],
  );
}

/** The services the executor's tests start beside it. */
export { auditModule };
export { schedulerModule } from '@loom/scheduler';

/** The audit log's PRIVILEGED_WORKFLOW_COMPONENT_FAILURE events of a workflow, oldest first. */
export async function componentFailureEvents(harness: ExecutorHarness, workflowName: string): Promise<AuditEvent[]> {
  const { events } = await call(harness.audit, 'query', {
    types: [AuditEventType.AUDIT_EVENT_TYPE_PRIVILEGED_WORKFLOW_COMPONENT_FAILURE],
    workflowName,
    since: undefined,
    until: undefined,
    pageSize: 0,
    pageToken: '',
  });
  return events;
}
