import { EXECUTOR_CONFIG_SECTIONS, type ExecutorConfig } from './executor-config.js';
import { randomUUID } from 'node:crypto';
import { status } from '@grpc/grpc-js';
import { graphSsoSettings } from '@loom/config';
import { AuditEventType, type ComponentStatus, type DryRunComponentOutput, ExecutorService, type Message, WorkflowState } from '@loom/contracts';
import {
  catalogFor,
  componentDefinitionToProto,
  FailedPreconditionError,
  findComponentDefinition,
  collectSecretSlots,
  isSealed,
  NotFoundError,
  resolveStoredName,
  resourceCatalog,
  resourceDefinitionToProto,
  ValidationError,
  type WorkflowConfiguration,
  workflowFromProto,
} from '@loom/domain';
import { StreamChannel } from '@loom/foundation';
import {
  appendRequired,
  AuditAppender,
  type AsyncImplementation,
  call,
  type ErrorSink,
  isServiceError,
  type ServiceClients,
  type ServiceInstance,
  type ServiceModule,
} from '@loom/service-kit';
import { type Messaging } from '@loom/messaging';
import { type Logger, redactor as processRedactor, type SecretRedactor } from '@loom/telemetry';
import { GraphStores } from './components/graph-stores.js';
import { componentFactories, isScriptComponent, pythonSandboxOf } from './components/registry.js';
import { WarmInterpreters } from './scripts/warm-interpreters.js';
import { dryRun } from './dry-run.js';
import { openMessaging } from './messaging-mode.js';
import { DurableMode, progressInterval } from './runtime/durable-mode.js';
import { GraphSsoQuery } from './graph-sso-query.js';
import { type ComponentFactory } from './runtime/component.js';
import { type ComponentError } from './runtime/component-error.js';
import { checkBatchSize, publishBatch } from './publishing.js';
import { type RunEvent, type RunState, WorkflowRun } from './runtime/workflow-run.js';

/** How long StopWorkflow lets in-flight messages drain when the request sets no deadline. */
export const DEFAULT_DRAIN_TIMEOUT_MS = 30_000;

/** Most run events one WatchRun stream holds for a client that reads slower than they come; past it the stream ends RESOURCE_EXHAUSTED (StreamChannel). */
export const MAX_PENDING_RUN_EVENTS = 1_000;

/** Most characters of a component failure's reason and cause kept in its audit event. */
const MAX_AUDIT_TEXT = 500;

/** Why the executor audits a script component's start (the specification's wording). */
export const SCRIPT_ENGINE_REASON = 'a workflow with the script engine started';

const STATES: Record<RunState, WorkflowState> = {
  STARTING: WorkflowState.WORKFLOW_STATE_STARTING,
  RUNNING: WorkflowState.WORKFLOW_STATE_RUNNING,
  STOPPING: WorkflowState.WORKFLOW_STATE_STOPPING,
  STOPPED: WorkflowState.WORKFLOW_STATE_STOPPED,
  FAILED: WorkflowState.WORKFLOW_STATE_FAILED,
};

/** The workflow is running or starting already. */
export class WorkflowAlreadyRunningError extends FailedPreconditionError {}

/** A workflow uses a component kind that is DISABLED here. */
export class ComponentDisabledError extends FailedPreconditionError {}

/** What the executor is built from. */
export interface ExecutorDependencies {
  readonly config: ExecutorConfig;
  readonly logger: Logger;
  readonly clients: ServiceClients;
  /** Component kinds by qualified name; the full registry unless a test narrows it. */
  readonly factories?: ReadonlyMap<string, ComponentFactory>;
  /** Scrubs this process's logs and spans; the decrypted values of each start are registered with it. Default: the process-wide one. */
  readonly redactor?: SecretRedactor;
  /** Durable mode: the NATS JetStream connection every run stores its messages through. Absent: in-memory mode. */
  readonly messaging?: Messaging;
}

/** Refuses a workflow whose components include one DISABLED by `loom.experimental.enabled`. */
export function checkComponentsEnabled(workflow: WorkflowConfiguration, experimentalEnabled: boolean): void {
  if (experimentalEnabled) return;
  workflow.components.forEach((instance, index) => {
    const definition = findComponentDefinition(instance.component.qualifiedName);
    if (definition?.experimental === true) {
      throw new ComponentDisabledError(
        `components[${index}] (${instance.name}) is a ${definition.name}, an experimental component that is DISABLED: ` +
          'set loom.experimental.enabled=true to run it',
      );
    }
  });
}

function drainTimeoutOf(seconds: number | undefined, nanos: number | undefined): number {
  if (seconds === undefined) return DEFAULT_DRAIN_TIMEOUT_MS;
  const ms = seconds * 1000 + Math.floor((nanos ?? 0) / 1e6);
  if (ms < 0) throw ValidationError.of('drain_timeout', 'must not be negative', 'INVALID_VALUE');
  return ms;
}

/** The running workflows of this executor, by stored name. */
export class Executor {
  private readonly runs = new Map<string, WorkflowRun>();
  private readonly starting = new Set<string>();
  private auditAppender: AuditAppender | undefined;
  private readonly factories: ReadonlyMap<string, ComponentFactory>;
  private readonly graphStores: GraphStores;
  /** Fresh Python interpreters kept ready for script hosts (with `loom.experimental.enabled`, the only way scripts run). */
  private readonly warmInterpreters: WarmInterpreters | undefined;

  constructor(private readonly dependencies: ExecutorDependencies) {
    const { config, logger } = dependencies;
    this.graphStores = new GraphStores(config, logger);
    if (dependencies.factories === undefined && config.experimental.enabled && config.scripts.python.warmInterpreters > 0) {
      this.warmInterpreters = new WarmInterpreters({
        count: config.scripts.python.warmInterpreters,
        memoryLimitMb: config.scripts.python.memoryLimitMb,
        sandbox: () => pythonSandboxOf(config),
        logger,
      });
      this.warmInterpreters.fill();
    }
    this.factories =
      dependencies.factories ??
      componentFactories(config, {
        graphStores: this.graphStores,
        skillGateway: () => dependencies.clients.get('skill-gateway'),
        ...(this.warmInterpreters === undefined ? {} : { warmInterpreters: this.warmInterpreters }),
      });
  }

  /** The audit client, created at first use (the server's own address is known only once it listens). */
  private get appender(): AuditAppender {
    this.auditAppender ??= new AuditAppender(this.dependencies.clients.get('audit'));
    return this.auditAppender;
  }

  /** Loads, opens, audits and starts a workflow; `name` is its stored name, or its workflow name when only one has it. */
  async start(name: string): Promise<WorkflowRun> {
    if (name === '') throw ValidationError.of('name', 'is required', 'MISSING_FIELD');
    const { config, clients, logger } = this.dependencies;
    const stored = await call(clients.get('config-store'), 'getWorkflow', { name });
    if (stored.workflow === undefined) throw new NotFoundError('workflow configuration', name);
    const workflow = workflowFromProto(stored.workflow);
    const current = this.runs.get(workflow.name);
    if (this.starting.has(workflow.name) || current?.state === 'RUNNING' || current?.state === 'STOPPING') {
      throw new WorkflowAlreadyRunningError(`workflow '${workflow.name}' is already ${this.starting.has(workflow.name) ? 'STARTING' : current?.state}`);
    }
    this.starting.add(workflow.name);
    try {
      checkComponentsEnabled(workflow, config.experimental.enabled);
      const plain = await this.openSecretSlots(workflow);
      if (plain.components.some(isScriptComponent)) {
        // fail closed: no script runs unless its start is on disk in the audit log
        await appendRequired(this.appender, {
          type: AuditEventType.AUDIT_EVENT_TYPE_WORKFLOW_PRIVILEGED_ACTION_EVENT,
          workflowName: workflow.name,
          reason: SCRIPT_ENGINE_REASON,
        });
      }
      const run = await WorkflowRun.start(plain, {
        factories: this.factories,
        logger,
        messageSamplingRatio: config.telemetry.messages.sampling.ratio,
        queueCapacity: config.executor.queueCapacity,
        onFailure: (failure) => this.auditScriptFailure(plain, failure),
        ...(this.dependencies.messaging === undefined
          ? {}
          : { durable: new DurableMode(this.dependencies.messaging, workflow.name, logger, progressInterval(config.messaging.consumer.ackWaitMs)) }),
      });
      this.runs.set(workflow.name, run);
      this.audit(AuditEventType.AUDIT_EVENT_TYPE_WORKFLOW_START, workflow.name, { runId: run.runId });
      logger.info({ workflow: workflow.name, runId: run.runId, components: plain.components.length }, 'workflow started');
      return run;
    } finally {
      this.starting.delete(workflow.name);
    }
  }

  /** Stops a run: sources first, then a bounded drain, then the components. */
  async stop(name: string, drainTimeoutMs: number): Promise<WorkflowRun> {
    const run = this.run(name);
    const drained = await run.stop(drainTimeoutMs);
    this.audit(AuditEventType.AUDIT_EVENT_TYPE_WORKFLOW_STOP, run.workflow.name, { runId: run.runId, drained: String(drained) });
    this.dependencies.logger.info({ workflow: run.workflow.name, runId: run.runId, drained }, 'workflow stopped');
    return run;
  }

  /** The latest run of a workflow, by stored name, or by workflow name when only one has it. */
  run(name: string): WorkflowRun {
    const stored = resolveStoredName(name, this.runs.keys());
    const run = stored === undefined ? undefined : this.runs.get(stored);
    if (run === undefined) throw new NotFoundError('run on this executor of workflow', name);
    return run;
  }

  /** Runs sample messages through a configuration without side effects (see dry-run.ts). */
  dryRun(workflow: WorkflowConfiguration, messages: readonly Message[], inlet: string): Promise<DryRunComponentOutput[]> {
    checkComponentsEnabled(workflow, this.dependencies.config.experimental.enabled);
    return dryRun(workflow, messages, inlet, this.factories, this.dependencies.logger);
  }

  /** Stops every run, then the embedded graph if it was started, and the making of warm interpreters (shutdown). */
  async stopAll(drainTimeoutMs: number): Promise<void> {
    await Promise.allSettled([...this.runs.keys()].map((name) => this.stop(name, drainTimeoutMs)));
    await this.warmInterpreters?.close();
    await this.graphStores.close();
  }

  /**
   * Opens the sealed secret slots of a workflow (in place) through DecryptResources: only the sealed values are sent,
   * never scripts or other options. Each plain value is registered with this process's redactor before any component
   * can log it: the secrets service's process redacts its own logs only, and the executor may run elsewhere.
   */
  private async openSecretSlots(workflow: WorkflowConfiguration): Promise<WorkflowConfiguration> {
    const collected = collectSecretSlots(workflow, (slot) => isSealed(slot.value));
    if (collected.slots.length === 0) return workflow;
    const { slots } = await call(this.dependencies.clients.get('secrets'), 'decryptResources', {
      workflow: undefined,
      slots: collected.slots,
      workflowName: workflow.name,
    });
    const redactor = this.dependencies.redactor ?? processRedactor;
    for (const slot of slots) redactor.add(slot.value);
    collected.apply(slots, 'secrets service (DecryptResources)');
    return workflow;
  }

  /** A script component's failed message is audited with its reason, and its kind, retryable flag and cause as attributes. */
  private auditScriptFailure(workflow: WorkflowConfiguration, failure: ComponentError): void {
    const { component } = failure;
    const instance = workflow.components.find((candidate) => candidate.name === component);
    if (instance === undefined || !isScriptComponent(instance)) return;
    const { kind, retryable, cause } = failure.record();
    this.appender
      .append({
        type: AuditEventType.AUDIT_EVENT_TYPE_PRIVILEGED_WORKFLOW_COMPONENT_FAILURE,
        workflowName: workflow.name,
        componentName: component,
        componentType: instance.component.type,
        reason: failure.message.slice(0, MAX_AUDIT_TEXT),
        attributes: { kind, retryable: String(retryable), ...(cause === undefined ? {} : { cause: cause.slice(0, MAX_AUDIT_TEXT) }) },
      })
      .catch((error: unknown) => this.dependencies.logger.error({ workflow: workflow.name, component, error: String(error) }, 'audit event not written'));
  }

  private audit(type: AuditEventType, workflowName: string, attributes: Record<string, string>): void {
    this.appender
      .append({ type, workflowName, attributes })
      .catch((error: unknown) =>
        this.dependencies.logger.error(
          { workflow: workflowName, type: AuditEventType[type], error: isServiceError(error) ? status[error.code] : String(error) },
          'audit event not written',
        ),
      );
  }
}

function statusOf(run: WorkflowRun): ComponentStatus[] {
  return run.counters().map((counters) => ({ ...counters }));
}

/** The loom.v1.Executor handlers over an executor. */
export function executorImplementation(
  executor: Executor,
  config: ExecutorConfig,
  logger: ErrorSink,
  graphSso?: GraphSsoQuery,
): AsyncImplementation<typeof ExecutorService> {
  return {
    async startWorkflow(request) {
      const run = await executor.start(request.name);
      return { runId: run.runId, state: STATES[run.state] };
    },

    async stopWorkflow(request) {
      const run = await executor.stop(request.name, drainTimeoutOf(request.drainTimeout?.seconds, request.drainTimeout?.nanos));
      return { state: STATES[run.state] };
    },

    getWorkflowStatus(request) {
      const run = executor.run(request.name);
      return Promise.resolve({
        name: run.workflow.name,
        runId: run.runId,
        state: STATES[run.state],
        startedAt: run.startedAt,
        components: statusOf(run),
        lastError: run.error,
      });
    },

    async publishMessage(request, context) {
      if (request.inlet === '') throw ValidationError.of('inlet', 'is required', 'MISSING_FIELD');
      if (request.body === undefined) throw ValidationError.of('body', 'is required: a JSON object', 'MISSING_FIELD');
      const run = executor.run(request.workflowName);
      const clientId = request.messageId !== '';
      const messageId = clientId ? request.messageId : randomUUID();
      // the context itself: its signal (an AbortController) is made only if the message must wait for room
      const outcome = await run.publish(request.inlet, { id: messageId, body: request.body, headers: { ...request.headers } }, context, clientId);
      return { messageId, duplicate: outcome === 'duplicate' };
    },

    async publishMessages(request, context) {
      if (request.inlet === '') throw ValidationError.of('inlet', 'is required', 'MISSING_FIELD');
      checkBatchSize(request.messages, 'messages');
      const run = executor.run(request.workflowName);
      run.checkInlet(request.inlet);
      return { results: await publishBatch(run, request.inlet, request.messages, context.signal, 'messages', logger) };
    },

    async publishStream(requests, send, context) {
      let run: WorkflowRun | undefined;
      let inlet = '';
      let index = 0;
      // one request at a time: the next is read only once this one's messages were accepted, so a
      // full workflow stops the reads and HTTP/2 flow control slows the sender down
      for await (const request of requests) {
        const field = `requests[${index}]`;
        if (run === undefined || (request.workflowName !== '' && request.workflowName !== run.workflow.name)) {
          if (request.workflowName === '') throw ValidationError.of(`${field}.workflow_name`, 'is required in the first request', 'MISSING_FIELD');
          run = executor.run(request.workflowName);
        }
        if (request.inlet !== '') inlet = request.inlet;
        if (inlet === '') throw ValidationError.of(`${field}.inlet`, 'is required in the first request', 'MISSING_FIELD');
        run.checkInlet(inlet);
        checkBatchSize(request.messages, `${field}.messages`);
        await send({ results: await publishBatch(run, inlet, request.messages, context.signal, `${field}.messages`, logger) });
        index++;
      }
    },

    async dryRun(request) {
      if (request.workflow === undefined) throw ValidationError.of('workflow', 'is required', 'MISSING_FIELD');
      return { outputs: await executor.dryRun(workflowFromProto(request.workflow), request.messages, request.inlet) };
    },

    async watchRun(request, send, context) {
      const run = executor.run(request.name);
      const ended = (): boolean => run.state === 'STOPPED' || run.state === 'FAILED';
      const events = new StreamChannel<RunEvent>({ capacity: MAX_PENDING_RUN_EVENTS, signal: context.signal });
      const stop = run.subscribe((event) => {
        events.push(event);
        // the event that ended the run is the stream's last
        if (ended()) events.close();
      });
      if (ended()) events.close();
      try {
        // the current state first; a run that already failed says why, as its FAILED event did
        await send({ time: new Date(), runId: run.runId, state: STATES[run.state], component: '', error: run.state === 'FAILED' ? run.error : '' });
        for await (const event of events) {
          await send({ time: event.time, runId: run.runId, state: STATES[event.state], component: event.component ?? '', error: event.error ?? '' });
        }
      } finally {
        stop();
        events.close();
      }
    },

    queryGraph(request) {
      if (graphSso === undefined) {
        return Promise.reject(
          new FailedPreconditionError('single sign-on graph queries are not configured (loom.graph.sso.providerConfigFile and loom.graph.sso.uri)'),
        );
      }
      return graphSso.handle(request);
    },

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
    const ssoSettings = graphSsoSettings(config.graph.sso);
    const graphSso = ssoSettings === undefined ? undefined : new GraphSsoQuery(ssoSettings, { logger });
    return {
      addToServer(server) {
        server.addService('loom.v1.Executor', ExecutorService, executorImplementation(executor, config, logger, graphSso));
      },
      close: async () => {
        // the runs first: their unfinished deliveries are nak'd over the connection before it closes (close is idempotent)
        await executor.stopAll(config.server.shutdown.deadlineMs);
        await messaging?.close();
        await graphSso?.close();
      },
    };
  },
};
