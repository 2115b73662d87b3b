import { graphSsoSettings } from '@loom/config';
import {
  type ComponentStatus,
  ExecutorService,
  type Failure,
  type GetWorkflowStatusResponse,
  type WatchRunRequest,
  type WatchRunResponse,
} from '@loom/contracts';
import { catalogFor, FailedPreconditionError, resourceCatalog, UnavailableError, ValidationError } from '@loom/domain';
import { componentDefinitionToProto, resourceDefinitionToProto, workflowFromProto } from '@loom/domain/proto';
import { StreamChannel } from '@loom/foundation';
import { type AsyncImplementation, callerIdentity, type ErrorSink, type ServiceInstance, type ServiceModule } from '@loom/service-kit';
import { type SecretRedactor } from '@loom/telemetry';
import { type Cluster } from './cluster/cluster.js';
import { type ExecutorRunStatus } from './cluster/executor-status.js';
import { clusterState, componentTotals, executorRunToProto, WORKFLOW_STATES as STATES, workflowStatusOf } from './cluster/totals.js';
import { EXECUTOR_CONFIG_SECTIONS, type ExecutorConfig } from './executor-config.js';
import { DEFAULT_DRAIN_TIMEOUT_MS, Executor, MAX_PENDING_RUN_EVENTS, WorkflowAlreadyRunningError } from './executor.service.js';
import { GraphSsoQuery } from './graph-sso-query.js';
import { GraphReads } from './graph-reads.js';
import { failureHandlers } from './failures/failure-handlers.js';
import { openMessaging } from './messaging-mode.js';
import { publishHandlers } from './publish-handlers.js';
import { traceHandlers } from './trace-handler.js';
import { redactedFailure } from './redacted-failure.js';
import { replayHandler } from './replay-handler.js';
import { type ComponentError } from './runtime/component-error.js';
import { type RunEvent, type WorkflowRun } from './runtime/workflow-run.js';

function drainTimeoutOf(seconds: number | undefined, nanos: number | undefined): number {
  if (seconds === undefined) return DEFAULT_DRAIN_TIMEOUT_MS;
  const ms = seconds * 1000 + Math.floor((nanos ?? 0) / 1e6);
  if (ms < 0) throw ValidationError.of('drain_timeout', 'must not be negative', 'INVALID_VALUE');
  return ms;
}

function statusOf(run: WorkflowRun): ComponentStatus[] {
  return run.counters().map((counters) => ({ ...counters }));
}

/**
 * The loom.v1.Executor handlers over an executor. `stopping` is true once loom's shutdown has begun stopping the runs:
 * a start is refused from then on (UNAVAILABLE), as the run would be stopped at close with no audit service to hear it.
 */
export function executorImplementation(
  executor: Executor,
  config: ExecutorConfig,
  logger: ErrorSink,
  graphSso?: GraphSsoQuery,
  stopping: () => boolean = () => false,
): AsyncImplementation<typeof ExecutorService> {
  const graphReads = new GraphReads({ stores: executor.graphs, graphResource: (workflow, resource) => executor.graphResource(workflow, resource) });
  return {
    async startWorkflow(request, context) {
      if (stopping())
        throw new UnavailableError(`loom is stopping: workflow '${request.name}' was not started; start it once loom is back, or on another executor`);
      try {
        // audited under the caller (a person through the CLI or the console, the scheduler), not the executor
        const run = await executor.start(request.name, callerIdentity(context.metadata));
        return { runId: run.runId, state: STATES[run.state], alreadyRunning: false };
      } catch (error) {
        // idempotent: a workflow running (or paused) already is answered with its run, not refused
        if (!(error instanceof WorkflowAlreadyRunningError) || error.run === undefined) throw error;
        return { runId: error.run.runId, state: STATES[error.run.state], alreadyRunning: true };
      }
    },

    async stopWorkflow(request, context) {
      const drainTimeoutMs = drainTimeoutOf(request.drainTimeout?.seconds, request.drainTimeout?.nanos);
      const state = await executor.stop(request.name, drainTimeoutMs, callerIdentity(context.metadata));
      return { state: STATES[state] };
    },

    pauseWorkflow: async ({ name }, context) => ({ state: STATES[await executor.pauseOrResume(name, 'PAUSED', callerIdentity(context.metadata))] }),
    resumeWorkflow: async ({ name }, context) => ({ state: STATES[await executor.pauseOrResume(name, 'RUNNING', callerIdentity(context.metadata))] }),

    async getWorkflowStatus(request) {
      return redactedStatus(await workflowStatus(executor, request.name), executor.redactor);
    },

    ...publishHandlers(executor, logger),
    ...replayHandler(executor),
    ...traceHandlers(executor),
    ...failureHandlers(executor),

    async dryRun(request) {
      if (request.workflow === undefined) throw ValidationError.of('workflow', 'is required', 'MISSING_FIELD');
      const scope = { inlet: request.inlet, until: request.until, maxMessages: request.maxMessages };
      return { outputs: await executor.dryRun(workflowFromProto(request.workflow), request.messages, scope) };
    },

    watchRun(request, send, context) {
      return watchRun(executor, request, send, context);
    },

    queryGraph(request) {
      if (graphSso === undefined) {
        return Promise.reject(
          new FailedPreconditionError('single sign-on graph queries are not configured (loom.graph.sso.providerConfigFile and loom.graph.sso.uri)'),
        );
      }
      return graphSso.handle(request);
    },

    readGraph: (request, context) => graphReads.read(request, context.signal),
    describeGraph: () => graphReads.describe(),

    listComponentDefinitions() {
      return Promise.resolve({
        definitions: catalogFor({ experimentalEnabled: config.experimental.enabled }).map(componentDefinitionToProto),
        resourceDefinitions: resourceCatalog().map(resourceDefinitionToProto),
      });
    },
  };
}

/** loom.v1.Executor, deployable alone (`loom serve --services executor`) or with the others. */
export const executorModule: ServiceModule<(typeof EXECUTOR_CONFIG_SECTIONS)[number]> = {
  name: 'executor',
  fullName: 'loom.v1.Executor',
  configSections: EXECUTOR_CONFIG_SECTIONS,
  async create({ config, logger, clients }): Promise<ServiceInstance> {
    const messaging = await openMessaging(config, logger);
    const executor = new Executor({ config, logger, clients, ...(messaging === undefined ? {} : { messaging }) });
    await executor.joinCluster();
    const ssoSettings = graphSsoSettings(config.graph.sso);
    const graphSso = ssoSettings === undefined ? undefined : new GraphSsoQuery(ssoSettings, { logger });
    let stopping = false;
    return {
      addToServer(server) {
        server.addService(
          'loom.v1.Executor',
          ExecutorService,
          executorImplementation(executor, config, logger, graphSso, () => stopping),
        );
      },
      // the runs stop while the services they call still answer, and their stops are audited (startServices' stop); no
      // run starts from then on
      quiesce: () => {
        stopping = true;
        return executor.stopAll(config.server.shutdown.deadlineMs);
      },
      close: async () => {
        // the runs first: their unfinished deliveries are nak'd over the connection before it closes (stopAll is
        // idempotent: runs quiesce stopped are skipped; with no quiesce before, as when loom's start failed, they stop here)
        await executor.stopAll(config.server.shutdown.deadlineMs);
        await executor.failures.close();
        await messaging?.close();
        await graphSso?.close();
      },
    };
  },
};

/**
 * Durable mode: every report another executor makes of its part of the run's workflow, as a WatchRun event naming
 * that executor, with the whole's state, each executor's part and the totals (this executor's part as it is now).
 */
async function watchReports(cluster: Cluster, run: WorkflowRun, push: (response: WatchRunResponse) => void): Promise<() => void> {
  const workflow = run.workflow.name;
  const latest = new Map<string, ExecutorRunStatus>();
  return cluster.watchStatus(workflow, (row) => {
    latest.set(row.executorId, row);
    const own = cluster.ownStatus(workflow);
    const rows = [...latest.values(), ...(own === undefined ? [] : [own])].sort((one, other) => one.executorId.localeCompare(other.executorId));
    // the event's run and state stay this stream's run and the whole's state (a watcher such as the scheduler reads
    // them as the run's); the reporting executor's own are in its part
    push({
      time: new Date(row.updatedAt),
      runId: run.runId,
      state: STATES[clusterState(cluster.desiredState(workflow)?.state, rows)],
      component: '',
      error: '',
      executorId: row.executorId,
      executors: rows.map(executorRunToProto),
      components: componentTotals(rows),
    });
  });
}

/**
 * The status with every error text redacted as the logs are: a component's last error quotes what it saw, which may be
 * a value the workflow's start decrypted (in a cluster the other executors' texts too, which this one's start decrypted
 * alike).
 */
function redactedStatus(status: GetWorkflowStatusResponse, redactor: SecretRedactor): GetWorkflowStatusResponse {
  const components = (list: readonly ComponentStatus[]): ComponentStatus[] =>
    list.map((component) => ({ ...component, lastError: redactor.redact(component.lastError) }));
  return {
    ...status,
    lastError: redactor.redact(status.lastError),
    components: components(status.components),
    executors: status.executors.map((part) => ({ ...part, lastError: redactor.redact(part.lastError), components: components(part.components) })),
  };
}

/** GetWorkflowStatus: in a cluster the totals and each executor's part, else this executor's run. */
async function workflowStatus(executor: Executor, name: string): Promise<GetWorkflowStatusResponse> {
  const cluster = executor.clusterMember;
  if (cluster !== undefined) {
    const workflow = cluster.resolve(name) ?? name;
    const rows = await cluster.status(workflow);
    const desired = cluster.desiredState(workflow);
    if (rows.length === 0 && desired === undefined) throw await executor.notRunning(name);
    return workflowStatusOf(workflow, rows, desired?.state, executor.localRun(workflow), cluster.executorId);
  }
  const run = await executor.requireRun(name);
  return {
    name: run.workflow.name,
    runId: run.runId,
    state: STATES[run.state],
    startedAt: run.startedAt,
    components: statusOf(run),
    lastError: run.error,
    executors: [],
    executorId: '',
  };
}

/** WatchRun: this executor's run events and, in a cluster, every other executor's reports. */
async function watchRun(
  executor: Executor,
  request: WatchRunRequest,
  send: (response: WatchRunResponse) => Promise<void>,
  context: { readonly signal: AbortSignal },
): Promise<void> {
  const run = await executor.requireRun(request.name);
  const cluster = executor.clusterMember;
  const ended = (): boolean => run.state === 'STOPPED' || run.state === 'FAILED';
  const events = new StreamChannel<WatchRunResponse>({ capacity: MAX_PENDING_RUN_EVENTS, signal: context.signal });
  const executorId = cluster?.executorId ?? '';
  // watchers see the texts redacted as the logs are
  const eventOf = (event: RunEvent): WatchRunResponse => ({
    time: event.time,
    runId: run.runId,
    state: STATES[event.state],
    component: event.component ?? '',
    error: executor.redactor.redact(event.error ?? ''),
    executorId,
    executors: [],
    components: [],
    ...(event.failure === undefined ? {} : { failure: failureToProto(event.failure, executor) }),
  });
  const stop = run.subscribe((event) => {
    events.push(eventOf(event));
    // the event that ended the run is the stream's last
    if (ended()) events.close();
  });
  const stopReports = cluster === undefined ? () => undefined : await watchReports(cluster, run, (response) => events.push(response));
  if (ended()) events.close();
  try {
    // the current state first; a run that already failed says why, as its FAILED event did
    const failed = run.state === 'FAILED' ? { error: run.error, ...(run.failure === undefined ? {} : { failure: run.failure }) } : {};
    await send(eventOf({ time: new Date(), state: run.state, ...failed }));
    for await (const response of events) await send(response);
  } finally {
    stop();
    stopReports();
    events.close();
  }
}

/** A component failure as loom.v1.Failure, its texts redacted by the executor's redactor. */
function failureToProto(failure: ComponentError, executor: Executor): Failure {
  const { kind, retryable, message, cause } = redactedFailure(failure, executor.redactor);
  return { kind, retryable, message, cause: cause ?? '' };
}
