import { hostname } from 'node:os';
import { type ExecutorConfig } from './executor-config.js';
import { status } from '@grpc/grpc-js';
import { AuditEventType, type DryRunComponentOutput, type GetWorkflowResponse, type Message } from '@loom/contracts';
import {
  FailedPreconditionError,
  findComponentDefinition,
  LoomError,
  collectSecretSlots,
  isSealed,
  NotFoundError,
  resolveStoredName,
  type ResourceInstance,
  ValidationError,
  type WorkflowConfiguration,
} from '@loom/domain';
import { workflowFromProto } from '@loom/domain/proto';
import { appendRequired, AuditAppender, call, isServiceError, type ServiceClients } from '@loom/service-kit';
import { type Messaging, type ReplayResult, type ReplayStart } from '@loom/messaging';
import { type Logger, redactor as processRedactor, type SecretRedactor } from '@loom/telemetry';
import { GraphStores } from './components/graph-stores.js';
import { graphResourceNamed } from './graph-reads.js';
import { componentFactories, isScriptComponent, pythonSandboxOf } from './components/registry.js';
import { WarmInterpreters } from './scripts/warm-interpreters.js';
import { dryRun, type DryRunScope } from './dry-run.js';
import { type FailedMessages, failedMessagesOf } from './failures/failed-messages.js';
import { Cluster, type ClusterMember } from './cluster/cluster.js';
import { leasedFactories } from './cluster/leased-source.js';
import { type ComponentFactory } from './runtime/component.js';
import { redactedFailure } from './redacted-failure.js';
import { type ComponentError } from './runtime/component-error.js';
import { jetStreamIntake, progressInterval } from './runtime/jetstream-intake.js';
import { MessageTrail } from './runtime/message-trail.js';
import { isFinal, type RunState, WorkflowRun } from './runtime/workflow-run.js';

/** How long StopWorkflow lets in-flight messages drain when the request sets no deadline. */
export const DEFAULT_DRAIN_TIMEOUT_MS = 30_000;

/** Most run events one WatchRun stream holds for a client that reads slower than they come; past it the stream ends RESOURCE_EXHAUSTED (StreamChannel). */
export const MAX_PENDING_RUN_EVENTS = 1_000;

/** How long a miss waits for the config store to say whether the workflow is stored at all. */
const STORED_CHECK_DEADLINE_MS = 2_000;

/** Most characters of a component failure's reason and cause kept in its audit event. */
const MAX_AUDIT_TEXT = 500;

/** Why the executor audits a script component's start (the specification's wording). */
export const SCRIPT_ENGINE_REASON = 'a workflow with the script engine started';

/** The workflow is running or starting already; `run` is the run when it is RUNNING or PAUSED (StartWorkflow answers it). */
export class WorkflowAlreadyRunningError extends FailedPreconditionError {
  constructor(
    message: string,
    readonly run?: WorkflowRun,
  ) {
    super(message);
  }
}

/**
 * This executor has no run of a workflow, told as the case is: stored but not running (start it), not stored at all,
 * or (the config store not answering) not known which.
 */
export class WorkflowNotRunningError extends LoomError {
  readonly kind = 'not-found';

  constructor(
    readonly workflow: string,
    readonly stored: boolean | undefined,
  ) {
    super(
      stored === undefined
        ? `workflow '${workflow}' is not running on this executor`
        : stored
          ? `workflow '${workflow}' is stored but not running: start it (loom workflow start ${shellWord(workflow)})`
          : `no workflow named '${workflow}'`,
    );
  }
}

/** A word as a POSIX shell reads it back: as it is when it is plain, else in single quotes. */
function shellWord(word: string): string {
  return /^[\w.@%+=:,/-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

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

/** This executor's name among the others: loom.executor.id, else the host name and process id. */
export function executorIdOf(config: Pick<ExecutorConfig, 'executor'>): string {
  return config.executor.id ?? `${hostname()}-${process.pid}`;
}

/** The running workflows of this executor, by stored name; with messaging configured, one of a cluster of executors. */
export class Executor implements ClusterMember {
  private readonly runs = new Map<string, WorkflowRun>();
  private readonly starting = new Set<string>();
  private auditAppender: AuditAppender | undefined;
  private readonly factories: ReadonlyMap<string, ComponentFactory>;
  /** What runs are built from: the factories, with the singleton sources under a lease in a cluster. */
  private runFactories: ReadonlyMap<string, ComponentFactory>;
  private readonly graphStores: GraphStores;
  private cluster: Cluster | undefined;
  /** This executor's name among the others (loom.executor.id). */
  readonly executorId: string;
  /** Scrubs what this executor logs, audits and tells watchers: the decrypted values of each start are registered with it. */
  readonly redactor: SecretRedactor;
  /** Fresh Python interpreters kept ready for script hosts (with `loom.experimental.enabled`, the only way scripts run). */
  private readonly warmInterpreters: WarmInterpreters | undefined;
  /** What happened to recent messages of every workflow run here, for TraceMessage (loom.executor.messageTrace.*). */
  readonly trail: MessageTrail;
  /** The failure store (issue 50): in JetStream in durable mode, in the data directory in memory mode. */
  readonly failures: FailedMessages;
  /** The stored version of each workflow as last loaded, which its run's failed messages name. */
  private readonly versions = new Map<string, number>();

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
    this.runFactories = this.factories;
    this.executorId = executorIdOf(config);
    this.trail = new MessageTrail(config.executor.messageTrace);
    this.redactor = dependencies.redactor ?? processRedactor;
    this.failures = failedMessagesOf(config, dependencies.messaging, logger, this.redactor);
  }

  /**
   * Durable mode: joins the executors sharing workflows through NATS (issue 35). From here on a start or stop reaches
   * them all, this executor starts every workflow the cluster runs, and singleton sources produce under a lease.
   */
  async joinCluster(): Promise<void> {
    const { messaging, config, logger } = this.dependencies;
    if (messaging === undefined || this.cluster !== undefined) return;
    const trace = { trail: this.trail, redactor: this.redactor, timeoutMs: config.executor.messageTrace.peerTimeoutMs };
    const cluster = await Cluster.open(messaging, { executorId: this.executorId, leaseMs: config.messaging.lease.timeMs, logger, trace }, this);
    this.runFactories = leasedFactories(this.factories, (key, handlers) => cluster.lease(key, handlers));
    this.cluster = cluster;
    await cluster.join();
    logger.info(
      { executorId: this.executorId, leaseMs: config.messaging.lease.timeMs },
      'executor joined the cluster: workflows are shared with every executor on these NATS servers',
    );
  }

  /** The cluster this executor is part of (durable mode, once joined). */
  get clusterMember(): Cluster | undefined {
    return this.cluster;
  }

  /** The audit client, created at first use (the server's own address is known only once it listens). */
  private get appender(): AuditAppender {
    this.auditAppender ??= new AuditAppender(this.dependencies.clients.get('audit'));
    return this.auditAppender;
  }

  /**
   * Loads, opens, audits and starts a workflow; `name` is its stored name, or its workflow name when only one has it.
   * In a cluster the start is recorded for every executor once it succeeded here.
   */
  async start(name: string, actor?: string): Promise<WorkflowRun> {
    if (name === '') throw ValidationError.of('name', 'is required', 'MISSING_FIELD');
    const workflow = await this.load(name);
    const run = this.cluster === undefined ? await this.launchLoaded(workflow) : await this.cluster.start(workflow.name, () => this.launchLoaded(workflow));
    this.audit(AuditEventType.AUDIT_EVENT_TYPE_WORKFLOW_START, workflow.name, { runId: run.runId }, actor);
    this.dependencies.logger.info({ workflow: workflow.name, runId: run.runId, components: workflow.components.length }, 'workflow started');
    return run;
  }

  /** Loads and starts this executor's run of a workflow, without auditing the start (the cluster's start reaching it). */
  async launch(name: string): Promise<WorkflowRun> {
    return this.launchLoaded(await this.load(name));
  }

  private async load(name: string): Promise<WorkflowConfiguration> {
    let stored: GetWorkflowResponse;
    try {
      stored = await call(this.dependencies.clients.get('config-store'), 'getWorkflow', { name });
    } catch (error) {
      if (isServiceError(error) && error.code === status.NOT_FOUND) throw new WorkflowNotRunningError(name, false);
      throw error;
    }
    if (stored.workflow === undefined) throw new NotFoundError('workflow configuration', name);
    const workflow = workflowFromProto(stored.workflow);
    this.versions.set(workflow.name, Number(stored.metadata?.version ?? 0));
    return workflow;
  }

  /** Opens and starts a loaded workflow here; a workflow with a script component starts only once that is audited. */
  private async launchLoaded(workflow: WorkflowConfiguration): Promise<WorkflowRun> {
    const { config, logger } = this.dependencies;
    const current = this.runs.get(workflow.name);
    if (this.starting.has(workflow.name)) throw new WorkflowAlreadyRunningError(`workflow '${workflow.name}' is already STARTING`);
    if (current?.state === 'RUNNING' || current?.state === 'PAUSED') {
      throw new WorkflowAlreadyRunningError(`workflow '${workflow.name}' is already ${current.state}`, current);
    }
    if (current?.state === 'STOPPING') {
      throw new WorkflowAlreadyRunningError(`workflow '${workflow.name}' is STOPPING: start it again once it is STOPPED`);
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
        factories: this.runFactories,
        logger,
        messageSamplingRatio: config.telemetry.messages.sampling.ratio,
        queueCapacity: config.executor.queueCapacity,
        workflowVersion: this.versions.get(workflow.name) ?? 0,
        trail: this.trail,
        onFailure: (failure) => this.auditScriptFailure(plain, failure),
        keepFailed: this.failures.keeper(workflow.name, this.versions.get(workflow.name) ?? 0),
        // with NATS configured every run keeps its messages in JetStream; without, in memory (the default intake)
        ...(this.dependencies.messaging === undefined
          ? {}
          : { intake: jetStreamIntake(this.dependencies.messaging, progressInterval(config.messaging.consumer.ackWaitMs)) }),
      });
      this.runs.set(workflow.name, run);
      return run;
    } finally {
      this.starting.delete(workflow.name);
    }
  }

  /**
   * Stops a run: sources first, then a bounded drain, then the components; in a cluster, on every executor. `actor`
   * (the caller) is audited as who stopped it; the executor itself when absent.
   */
  async stop(name: string, drainTimeoutMs: number, actor?: string): Promise<RunState> {
    if (this.cluster !== undefined) {
      const workflow = this.cluster.resolve(name) ?? name;
      const state = await this.cluster.stop(workflow, drainTimeoutMs);
      const runId = this.runs.get(workflow)?.runId ?? '';
      this.audit(AuditEventType.AUDIT_EVENT_TYPE_WORKFLOW_STOP, workflow, { runId, executorId: this.executorId }, actor);
      this.dependencies.logger.info({ workflow, runId }, 'workflow stopped on every executor');
      return state;
    }
    const run = await this.requireRun(name);
    const drained = await run.stop(drainTimeoutMs);
    this.audit(AuditEventType.AUDIT_EVENT_TYPE_WORKFLOW_STOP, run.workflow.name, { runId: run.runId, drained: String(drained) }, actor);
    this.dependencies.logger.info({ workflow: run.workflow.name, runId: run.runId, drained }, 'workflow stopped');
    return run.state;
  }

  /**
   * Pauses (`PAUSED`) or resumes (`RUNNING`) a run: its sources and consumers stop or go on taking messages, those in
   * flight finish; in a cluster, on every executor. A run neither running nor paused is a FailedPreconditionError.
   * `actor` (the caller) is audited as who paused or resumed it; the executor itself when absent.
   */
  async pauseOrResume(name: string, state: 'PAUSED' | 'RUNNING', actor?: string): Promise<RunState> {
    if (name === '') throw ValidationError.of('name', 'is required', 'MISSING_FIELD');
    const [verb, type] =
      state === 'PAUSED' ? ['paused', AuditEventType.AUDIT_EVENT_TYPE_WORKFLOW_PAUSED] : ['resumed', AuditEventType.AUDIT_EVENT_TYPE_WORKFLOW_RESUMED];
    if (this.cluster !== undefined) {
      const workflow = this.cluster.resolve(name) ?? name;
      const reached = await this.cluster.pauseOrResume(workflow, state);
      this.audit(type, workflow, { executorId: this.executorId }, actor);
      this.dependencies.logger.info({ workflow, executorId: this.executorId }, `workflow ${verb} on every executor`);
      return reached;
    }
    const run = await this.requireRun(name);
    if (run.state !== 'RUNNING' && run.state !== 'PAUSED') {
      throw new FailedPreconditionError(`workflow '${run.workflow.name}' is ${run.state}, not RUNNING or PAUSED`);
    }
    await (state === 'PAUSED' ? run.pause() : run.resume());
    this.audit(type, run.workflow.name, { runId: run.runId }, actor);
    this.dependencies.logger.info({ workflow: run.workflow.name, runId: run.runId }, `workflow ${verb}`);
    return run.state;
  }

  /**
   * The stored name a workflow goes by (`etl_<uuid>` for `etl`): its run's here, else the config store's, else the name
   * as given (a workflow deleted since, whose failed messages may still be kept under it).
   */
  async storedName(name: string): Promise<string> {
    const running = resolveStoredName(name, this.runs.keys());
    if (running !== undefined) return running;
    try {
      return (await this.load(name)).name;
    } catch (error) {
      if (error instanceof WorkflowNotRunningError) return name;
      throw error;
    }
  }

  /** The latest run of a workflow, by stored name, or by workflow name when only one has it; WorkflowNotRunningError when none. */
  run(name: string): WorkflowRun {
    const stored = resolveStoredName(name, this.runs.keys());
    const run = stored === undefined ? undefined : this.runs.get(stored);
    if (run === undefined) throw new WorkflowNotRunningError(name, undefined);
    return run;
  }

  /**
   * The latest run of a workflow, as `run`; when there is none, the WorkflowNotRunningError says whether the workflow
   * is stored (asking the config store, so only a miss costs a call): start it, or no workflow has that name. `field`
   * names the request's field in the error for an empty name.
   */
  async requireRun(name: string, field = 'name'): Promise<WorkflowRun> {
    if (name === '') throw ValidationError.of(field, 'is required', 'MISSING_FIELD');
    try {
      return this.run(name);
    } catch (error) {
      if (!(error instanceof WorkflowNotRunningError)) throw error;
      throw await this.notRunning(name);
    }
  }

  /** Why there is no run of a workflow here (or in the cluster): stored but not running, or not stored at all. */
  async notRunning(name: string): Promise<WorkflowNotRunningError> {
    return new WorkflowNotRunningError(name, await this.isStored(name));
  }

  /**
   * Sends a workflow's kept processed messages through its running (current) version again (ReplayMessages, issue 50),
   * and audits it. Refused with nothing sent in memory mode (naming the settings that enable it), for a workflow not
   * running or paused here, and by the messaging for a start past what is kept.
   */
  async replay(name: string, start: ReplayStart): Promise<ReplayResult> {
    const { messaging } = this.dependencies;
    if (messaging === undefined) {
      throw new FailedPreconditionError(
        'replay needs durable messages: in-memory mode keeps no processed message (set loom.messaging.nats.servers and loom.messaging.stream.keepProcessedMs)',
      );
    }
    const run = await this.requireRun(name, 'workflow');
    if (run.state !== 'RUNNING' && run.state !== 'PAUSED') {
      throw new FailedPreconditionError(
        `workflow '${run.workflow.name}' is ${run.state.toLowerCase()} here: start it (loom workflow start ${shellWord(run.workflow.name)}) before a replay`,
      );
    }
    const result = await messaging.replay(run.workflow.name, start);
    this.audit(AuditEventType.AUDIT_EVENT_TYPE_MESSAGES_REPLAYED, run.workflow.name, {
      ...('sinceMs' in start ? { sinceMs: String(start.sinceMs) } : { fromSequence: String(start.fromSequence) }),
      replayed: String(result.replayed),
      skipped: String(result.skipped),
      duplicates: String(result.duplicates),
      firstSequence: String(result.firstSequence),
      lastSequence: String(result.lastSequence),
    });
    this.dependencies.logger.info({ workflow: run.workflow.name, ...start, ...result }, 'kept messages replayed');
    return result;
  }

  /** Whether the config store has a workflow of this name; undefined when it does not answer. */
  async isStored(name: string): Promise<boolean | undefined> {
    try {
      await call(this.dependencies.clients.get('config-store'), 'getWorkflow', { name }, { deadlineMs: STORED_CHECK_DEADLINE_MS });
      return true;
    } catch (error) {
      return isServiceError(error) && error.code === status.NOT_FOUND ? false : undefined;
    }
  }

  /**
   * A graph database resource of a stored workflow with its sealed values opened, for ReadGraph: `resource` is its
   * name in the workflow (with or without its `_<uuid>`), or empty when the workflow has exactly one graph database
   * resource. Only that resource's values are decrypted.
   */
  async graphResource(workflowName: string, resource: string): Promise<ResourceInstance> {
    const workflow = await this.load(workflowName);
    const instance = graphResourceNamed(workflow, resource);
    const opened = await this.openSecretSlots({ ...workflow, resources: [instance], workflowResources: [], components: [] });
    return opened.resources[0] ?? instance;
  }

  /** The graph stores of this executor's components (and the embedded graph). */
  get graphs(): GraphStores {
    return this.graphStores;
  }

  /** Runs sample messages through a configuration without side effects (see dry-run.ts). */
  dryRun(workflow: WorkflowConfiguration, messages: readonly Message[], scope: DryRunScope): Promise<DryRunComponentOutput[]> {
    checkComponentsEnabled(workflow, this.dependencies.config.experimental.enabled);
    return dryRun(workflow, messages, scope, this.factories, this.dependencies.logger);
  }

  /** This executor's latest run of a workflow by its workflow name, if it has one (no name resolution). */
  localRun(workflow: string): WorkflowRun | undefined {
    return this.runs.get(workflow);
  }

  /**
   * Stops every run not stopped yet (each stop audited once) and waits for the audit events sent so far to be answered, then closes the embedded graph
   * if it was started and the making of warm interpreters (shutdown). In a cluster this executor leaves: its own runs stop, the others go on.
   */
  async stopAll(drainTimeoutMs: number): Promise<void> {
    if (this.cluster !== undefined) {
      await this.cluster.close();
      await Promise.allSettled([...this.runs.values()].map((run) => run.stop(drainTimeoutMs)));
    } else {
      await Promise.allSettled([...this.runs].flatMap(([name, run]) => (isFinal(run.state) ? [] : [this.stop(name, drainTimeoutMs)])));
    }
    await this.auditAppender?.settled();
    await Promise.all([this.warmInterpreters?.close(), this.graphStores.close()]);
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
    for (const slot of slots) this.redactor.add(slot.value);
    collected.apply(slots, 'secrets service (DecryptResources)');
    return workflow;
  }

  /** A script component's failed message is audited with its reason, and its kind, retryable flag and cause as attributes, redacted. */
  private auditScriptFailure(workflow: WorkflowConfiguration, failure: ComponentError): void {
    const { component } = failure;
    const instance = workflow.components.find((candidate) => candidate.name === component);
    if (instance === undefined || !isScriptComponent(instance)) return;
    const { kind, retryable, message, cause } = redactedFailure(failure, this.redactor);
    this.appender
      .append({
        type: AuditEventType.AUDIT_EVENT_TYPE_PRIVILEGED_WORKFLOW_COMPONENT_FAILURE,
        workflowName: workflow.name,
        componentName: component,
        componentType: instance.component.type,
        reason: message.slice(0, MAX_AUDIT_TEXT),
        attributes: { kind, retryable: String(retryable), ...(cause === undefined ? {} : { cause: cause.slice(0, MAX_AUDIT_TEXT) }) },
      })
      .catch((error: unknown) => this.dependencies.logger.error({ workflow: workflow.name, component, error: String(error) }, 'audit event not written'));
  }

  /** Audits an action a caller took on a workflow (the failure store's retry and discard), the caller as actor. */
  auditAs(type: AuditEventType, workflowName: string, actor: string | undefined, attributes: Record<string, string>): void {
    this.audit(type, workflowName, attributes, actor);
  }

  private audit(type: AuditEventType, workflowName: string, attributes: Record<string, string>, actor?: string): void {
    this.appender
      .append({ type, workflowName, attributes, ...(actor === undefined ? {} : { actor }) })
      .catch((error: unknown) =>
        this.dependencies.logger.error(
          { workflow: workflowName, type: AuditEventType[type], error: isServiceError(error) ? status[error.code] : String(error) },
          'audit event not written',
        ),
      );
  }
}
