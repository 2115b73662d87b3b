import {
  ApplyAction,
  AuditEventType,
  type SecretsClient,
  type PutWorkflowRequest,
  WorkflowEventType,
  type WatchWorkflowsResponse,
  type WorkflowMetadata,
  WorkflowStoreService,
  type WorkflowSummary,
} from '@loom/contracts';
import {
  checkWorkflowName,
  FailedPreconditionError,
  MAX_WORKFLOW_BYTES,
  NotFoundError,
  parseStoredName,
  readWorkflowText,
  restoreVariableReferences,
  type StoredName,
  variableReferencesOf,
  collectSecretSlots,
  isSealed,
  needsSealing,
  serializeWorkflowJson,
  validateWorkflow,
  ValidationError,
  withCatalogDefinitions,
  type WorkflowConfiguration,
} from '@loom/domain';
import { scheduleFromProto, scheduleToProto, workflowFromProto, workflowToProto } from '@loom/domain/proto';
import { StreamChannel } from '@loom/foundation';
import { appendRequired, AuditAppender, type AsyncImplementation, call, type ServiceInstance, type ServiceModule } from '@loom/service-kit';
import { type Logger } from '@loom/telemetry';
import { checkSchedule } from './schedule-check.js';
import { planApply, planEntries, UnchangedTexts } from './workflow-apply.js';
import { compactFormOf, diffTexts } from './workflow-diff.js';
import { sha256Of, type WorkflowMetadataFile } from './workflow-directory.js';
import { type BeforeChange, type StoredWorkflow, type WorkflowChange, WorkflowRepository } from './workflow-repository.js';

const DEFAULT_PAGE_SIZE = 100;
const MAX_PAGE_SIZE = 1000;
/** Changes a WatchWorkflows stream may fall behind by before it is ended RESOURCE_EXHAUSTED (the watcher watches again and gets a fresh snapshot). */
export const WATCH_WORKFLOWS_CAPACITY = 10_000;
/** Deadline of the SealConfiguration call a push makes. */
const SEAL_DEADLINE_MS = 10_000;

/** What the WorkflowStore handlers work with. */
export interface ConfigStoreDependencies {
  readonly repository: WorkflowRepository;
  /** Client of the secrets service, presenting the config store's identity (created at first use: the port is known only after listen). */
  readonly secrets: () => SecretsClient;
  /** Where the store's audit events go, created at first use like `secrets`. */
  readonly audit: () => AuditAppender;
  readonly logger: Logger;
  /** Changes one WatchWorkflows stream holds for a slow watcher (default WATCH_WORKFLOWS_CAPACITY). */
  readonly watchCapacity?: number;
}

function summaryOf(workflow: StoredWorkflow): WorkflowSummary {
  return {
    name: workflow.name.full,
    uuid: workflow.name.uuid,
    version: workflow.metadata.version,
    autoStart: workflow.configuration?.autoStart ?? false,
    valid: workflow.configuration !== undefined,
    invalidReason: workflow.invalidReason,
  };
}

function metadataOf(workflow: StoredWorkflow): WorkflowMetadata {
  return metadataFromFile(workflow.metadata);
}

function metadataFromFile(metadata: WorkflowMetadataFile): WorkflowMetadata {
  const { version, sha256, updatedAt, pushedBy } = metadata;
  return { version, sha256, updatedAt: new Date(updatedAt), pushedBy };
}

/** A version number of a request, refused below 1. */
function checkVersion(version: number, field: string): number {
  if (!Number.isSafeInteger(version) || version < 1) throw ValidationError.of(field, `must be a version number, 1 or more (not ${version})`, 'INVALID_VALUE');
  return version;
}

/** A configuration ready to store: its sealed form, that form's file text, and the `$$` references it was pushed with. */
interface PreparedWorkflow {
  readonly configuration: WorkflowConfiguration;
  readonly text: string;
  readonly variableReferences: Readonly<Record<string, string>>;
}

/** The configuration as its `.workflow.json` text, refused when over MAX_WORKFLOW_BYTES. */
function fileTextOf(configuration: WorkflowConfiguration): string {
  const text = serializeWorkflowJson(configuration);
  const bytes = Buffer.byteLength(text);
  if (bytes > MAX_WORKFLOW_BYTES) {
    throw ValidationError.of('', `the configuration is ${bytes} bytes as a .workflow.json file; at most ${MAX_WORKFLOW_BYTES} (4 MiB) are stored`, 'TOO_LARGE');
  }
  return text;
}

/**
 * Seals a workflow's secret slots through SealConfiguration, in place: only the slots that need it (a `$$<variable>`,
 * a sealed value, a sensitive value in clear) are sent, never scripts or other options. An answer that does not match
 * the slots sent fails the push (UNAVAILABLE): the unsealed configuration may hold passwords in clear.
 */
async function sealSecretSlots(workflow: WorkflowConfiguration, client: SecretsClient, signal: AbortSignal): Promise<WorkflowConfiguration> {
  const collected = collectSecretSlots(workflow, needsSealing);
  if (collected.slots.length === 0) return workflow;
  const request = { workflow: undefined, slots: collected.slots, workflowName: workflow.name };
  const { slots } = await call(client, 'sealConfiguration', request, { deadlineMs: SEAL_DEADLINE_MS, signal });
  collected.apply(slots, 'secrets service (SealConfiguration)');
  return workflow;
}

/**
 * The workflow a PutWorkflow request carries: the full form (`workflow`) or the compact text (`compact`, read as `loom
 * workflow push` reads a file, its violations naming the compact file's fields and lines); exactly one. ValidationError.
 */
function pushedWorkflow(request: PutWorkflowRequest): WorkflowConfiguration {
  const { workflow, compact } = request;
  if (workflow !== undefined && compact !== undefined) {
    throw ValidationError.of('compact', 'is given with workflow: send one form, the full workflow or the compact text', 'CONFLICTING_FIELDS');
  }
  if (compact === undefined) {
    if (workflow === undefined) throw ValidationError.of('workflow', 'is required: the full form in workflow, or the compact text in compact', 'MISSING_FIELD');
    return workflowFromProto(workflow);
  }
  const sourceName = checkSourceName(request.sourceName ?? '');
  const bytes = Buffer.byteLength(compact);
  if (bytes > MAX_WORKFLOW_BYTES) throw ValidationError.of('compact', `is ${bytes} bytes; at most ${MAX_WORKFLOW_BYTES} (4 MiB)`, 'TOO_LARGE');
  if (compact.trim() === '') throw ValidationError.of('compact', 'is empty: a compact workflow in YAML or JSON', 'MISSING_FIELD');
  return readWorkflowText(compact, sourceName).workflow;
}

/** Most characters of a PutWorkflow source_name, which error texts repeat. */
const MAX_SOURCE_NAME = 255;

function checkSourceName(sourceName: string): string {
  // eslint-disable-next-line no-control-regex -- control characters are what is refused
  if (sourceName.length > MAX_SOURCE_NAME || /[\u0000-\u001f\u007f]/.test(sourceName)) {
    throw ValidationError.of('source_name', `must be a file name of at most ${MAX_SOURCE_NAME} characters, without control characters`, 'INVALID_VALUE');
  }
  return sourceName;
}

function configurationOf(workflow: StoredWorkflow): WorkflowConfiguration {
  if (workflow.configuration === undefined) {
    throw new FailedPreconditionError(`workflow '${workflow.name.full}' is stored but invalid: ${workflow.invalidReason}`);
  }
  return workflow.configuration;
}

function pageStart(token: string): string | undefined {
  if (token === '') return undefined;
  const name = Buffer.from(token, 'base64url').toString('utf8');
  if (name === '' || Buffer.from(name).toString('base64url') !== token)
    throw ValidationError.of('page_token', 'is not a token this service issued', 'INVALID_VALUE');
  return name;
}

function pageSize(size: number): number {
  if (size < 0) throw ValidationError.of('page_size', 'must not be negative', 'INVALID_VALUE');
  return size === 0 ? DEFAULT_PAGE_SIZE : Math.min(size, MAX_PAGE_SIZE);
}

function putEvent(workflow: StoredWorkflow): WatchWorkflowsResponse {
  return {
    type: WorkflowEventType.WORKFLOW_EVENT_TYPE_PUT,
    summary: summaryOf(workflow),
    workflow: workflow.configuration === undefined ? undefined : workflowToProto(workflow.configuration),
    metadata: metadataOf(workflow),
  };
}

function changeEvent(change: WorkflowChange): WatchWorkflowsResponse {
  if (change.type === 'put') return putEvent(change.workflow);
  return {
    type: WorkflowEventType.WORKFLOW_EVENT_TYPE_DELETE,
    summary: summaryOf(change.workflow),
    workflow: undefined,
    metadata: metadataOf(change.workflow),
  };
}

/** The loom.v1.WorkflowStore handlers. */
export function configStoreImplementation(deps: ConfigStoreDependencies): AsyncImplementation<typeof WorkflowStoreService> {
  const { repository, secrets, audit, logger } = deps;
  const lockKey = (name: string): string => parseStoredName(name)?.base ?? name;
  const unchangedTexts = new UnchangedTexts();
  /**
   * Appends a change's audit event before the change is written, with the workflow's version and sha256 (never a
   * value); fails closed: an event that cannot be written refuses the change (UNAVAILABLE) and nothing is changed.
   */
  const auditFirst =
    (type: AuditEventType, workflowName: string, actor: string | undefined, attributes: Record<string, string> = {}): BeforeChange =>
    async (metadata) => {
      await appendRequired(audit(), {
        type,
        workflowName,
        actor: actor ?? 'anonymous',
        attributes: { version: String(metadata.version), sha256: metadata.sha256, ...attributes },
      });
    };

  /**
   * Checks a named configuration and seals it: stored with the catalog's definitions, never a copy that leaves fields
   * out; nothing is written unless every $$ reference resolves and every password is sealed. The references are noted
   * first (sealing replaces them) so that export can write them back.
   */
  const prepare = async (named: WorkflowConfiguration, signal: AbortSignal): Promise<PreparedWorkflow> => {
    validateWorkflow(named);
    const withDefinitions = withCatalogDefinitions(named);
    const variableReferences = variableReferencesOf(withDefinitions);
    const configuration = await sealSecretSlots(withDefinitions, secrets(), signal);
    return { configuration, text: fileTextOf(configuration), variableReferences };
  };
  /** Stores a prepared configuration as a new version (call inside exclusive), its push audited first. */
  const store = (
    name: StoredName,
    prepared: PreparedWorkflow,
    identity: string | undefined,
    options: { expectedVersion: number | undefined; sourceText?: string; attributes?: Record<string, string> },
  ): Promise<{ workflow: StoredWorkflow; unchanged: boolean }> =>
    repository.put(name, prepared.configuration, prepared.text, {
      expectedVersion: options.expectedVersion,
      ...(options.sourceText === undefined ? {} : { sourceSha256: sha256Of(options.sourceText) }),
      pushedBy: identity ?? '',
      variableReferences: prepared.variableReferences,
      beforeWrite: auditFirst(AuditEventType.AUDIT_EVENT_TYPE_WORKFLOW_CONFIG_PUSHED, name.full, identity, options.attributes),
    });

  return {
    async putWorkflow(request, context) {
      const pushed = pushedWorkflow(request);
      checkWorkflowName(pushed.name);
      fileTextOf(pushed); // refused before sealing when already too large
      const { workflow: stored, unchanged } = await repository.exclusive(lockKey(pushed.name), async () => {
        const name = repository.storedNameFor(pushed.name);
        const prepared = await prepare({ ...pushed, name: name.full }, context.signal);
        return store(name, prepared, context.identity, { expectedVersion: request.expectedVersion, sourceText: request.compact });
      });
      const fields = { workflow: stored.name.full, version: stored.metadata.version, pushedBy: context.identity ?? '' };
      logger.info(fields, unchanged ? 'workflow pushed unchanged: identical to the stored version, nothing written' : 'workflow stored');
      return { summary: summaryOf(stored), metadata: metadataOf(stored), unchanged };
    },

    async getWorkflow(request) {
      const workflow = repository.get(checkWorkflowName(request.name));
      if (request.version === undefined) {
        const variableReferences = { ...workflow.metadata.variableReferences };
        return { workflow: workflowToProto(configurationOf(workflow)), metadata: metadataOf(workflow), variableReferences };
      }
      const kept = await repository.version(workflow, checkVersion(request.version, 'version'));
      const variableReferences = { ...kept.metadata.variableReferences };
      return { workflow: workflowToProto(kept.configuration), metadata: metadataFromFile(kept.metadata), variableReferences };
    },

    async listWorkflowVersions(request) {
      const workflow = repository.get(checkWorkflowName(request.name));
      const versions = await repository.versions(workflow);
      return { name: workflow.name.full, versions: versions.map(metadataFromFile), oldestKept: versions.at(-1)?.version ?? workflow.metadata.version };
    },

    async diffWorkflowVersions(request) {
      const workflow = repository.get(checkWorkflowName(request.name));
      const [from, to] = await Promise.all([
        repository.version(workflow, checkVersion(request.fromVersion, 'from_version')),
        repository.version(workflow, checkVersion(request.toVersion, 'to_version')),
      ]);
      const label = (version: number): string => `${workflow.name.full} version ${version}`;
      const difference = diffTexts(
        label(from.metadata.version),
        compactFormOf(from.configuration, from.metadata.variableReferences ?? {}),
        label(to.metadata.version),
        compactFormOf(to.configuration, to.metadata.variableReferences ?? {}),
      );
      return { ...difference, from: metadataFromFile(from.metadata), to: metadataFromFile(to.metadata) };
    },

    async rollbackWorkflow(request, context) {
      const name = checkWorkflowName(request.name);
      const toVersion = checkVersion(request.toVersion, 'to_version');
      const { workflow: stored, unchanged } = await repository.exclusive(lockKey(repository.get(name).name.full), async () => {
        const workflow = repository.get(name);
        const kept = await repository.version(workflow, toVersion);
        // its $$ references resolved again and its sealed values re-sealed under the active key, as a push would
        const restored = restoreVariableReferences(kept.configuration, kept.metadata.variableReferences ?? {});
        const prepared = await prepare({ ...restored, name: workflow.name.full }, context.signal);
        return store(workflow.name, prepared, context.identity, {
          expectedVersion: request.expectedVersion,
          attributes: { rolledBackTo: String(toVersion) },
        });
      });
      logger.info({ workflow: stored.name.full, version: stored.metadata.version, rolledBackTo: toVersion, unchanged }, 'workflow rolled back');
      return { summary: summaryOf(stored), metadata: metadataOf(stored), unchanged };
    },

    planWorkflows: (request) => Promise.resolve({ entries: planEntries(planApply({ ...request, apply: false }, repository, unchangedTexts), new Map()) }),

    async applyWorkflows(request, context) {
      const plan = planApply(request, repository, unchangedTexts);
      const written = new Map<string, number>();
      const changing = plan.workflows.filter((planned) => planned.action !== ApplyAction.APPLY_ACTION_UNCHANGED);
      const changingSchedules = plan.schedules.filter((planned) => planned.action !== ApplyAction.APPLY_ACTION_UNCHANGED);
      const applied = request.apply && (changing.length > 0 || changingSchedules.length > 0 || plan.removed.length > 0);
      if (applied) {
        // every workflow sealed before any is written: a variable missing in this environment changes nothing
        const prepared: PreparedWorkflow[] = [];
        const violations: { field: string; description: string; reason?: string }[] = [];
        for (const [index, planned] of changing.entries()) {
          try {
            prepared.push(await prepare(structuredClone(planned.configuration), context.signal));
          } catch (error) {
            if (!(error instanceof ValidationError)) throw error;
            for (const violation of error.violations)
              violations.push({
                ...violation,
                field: `${planned.sourceName}: ${violation.field}`,
                description: `${violation.description} (workflows[${index}])`,
              });
          }
        }
        if (violations.length > 0) throw new ValidationError(violations);
        for (const [index, planned] of changing.entries()) {
          const { workflow } = await repository.exclusive(lockKey(planned.name.full), () =>
            store(planned.name, prepared[index] as PreparedWorkflow, context.identity, {
              expectedVersion: planned.storedVersion,
              sourceText: planned.sourceText,
              attributes: { change: 'applied', source: planned.sourceName },
            }),
          );
          written.set(planned.name.full, workflow.metadata.version);
        }
        for (const planned of changingSchedules) {
          await repository.exclusive(lockKey(planned.workflowName), async () => {
            const workflow = repository.get(planned.workflowName, 'workflow_name');
            const { schedule } = planned;
            const attributes = { change: 'applied', enabled: String(schedule.enabled), cron: schedule.cron, timezone: schedule.timezone };
            await repository.putSchedule(
              workflow,
              schedule,
              auditFirst(AuditEventType.AUDIT_EVENT_TYPE_SCHEDULE_CHANGED, workflow.name.full, context.identity, attributes),
            );
          });
        }
        for (const removed of plan.removed) {
          await repository.exclusive(lockKey(removed.name.full), async () => {
            const workflow = repository.get(removed.name.full);
            await repository.delete(
              workflow,
              removed.metadata.version,
              auditFirst(AuditEventType.AUDIT_EVENT_TYPE_WORKFLOW_DELETED, workflow.name.full, context.identity, { change: 'pruned' }),
            );
          });
        }
      }
      const entries = planEntries(plan, written);
      const counts = { workflows: plan.workflows.length, changing: changing.length, removed: plan.removed.length, schedules: changingSchedules.length };
      logger.info({ ...counts, applied }, applied ? 'workflow folder applied' : 'workflow folder planned');
      return { entries, applied };
    },

    listWorkflows(request) {
      const limit = pageSize(request.pageSize);
      const after = pageStart(request.pageToken);
      const all = repository.list().filter((workflow) => after === undefined || workflow.name.full > after);
      const page = all.slice(0, limit);
      const last = page.at(-1);
      const nextPageToken = all.length > limit && last !== undefined ? Buffer.from(last.name.full).toString('base64url') : '';
      return Promise.resolve({ workflows: page.map(summaryOf), nextPageToken });
    },

    async deleteWorkflow(request, context) {
      const name = checkWorkflowName(request.name);
      const deleted = await repository.exclusive(lockKey(repository.get(name).name.full), async () => {
        const workflow = repository.get(name);
        await repository.delete(
          workflow,
          request.expectedVersion,
          auditFirst(AuditEventType.AUDIT_EVENT_TYPE_WORKFLOW_DELETED, workflow.name.full, context.identity),
        );
        return workflow;
      });
      logger.info({ workflow: deleted.name.full }, 'workflow deleted');
      return {};
    },

    async watchWorkflows(_request, send, context) {
      const changes = new StreamChannel<WorkflowChange>({ capacity: deps.watchCapacity ?? WATCH_WORKFLOWS_CAPACITY, signal: context.signal });
      // subscribed with the snapshot taken, so no change falls between the two; changes wait while the snapshot is sent
      const { snapshot, stop } = repository.watch((change) => changes.push(change));
      try {
        for (const workflow of snapshot) await send(putEvent(workflow));
        await send({ type: WorkflowEventType.WORKFLOW_EVENT_TYPE_SNAPSHOT_COMPLETE, summary: undefined, workflow: undefined, metadata: undefined });
        for await (const change of changes) await send(changeEvent(change));
      } finally {
        stop();
        changes.close();
      }
    },

    async putSchedule(request, context) {
      const name = checkWorkflowName(request.workflowName, 'workflow_name');
      if (request.schedule === undefined) throw ValidationError.of('schedule', 'is required', 'MISSING_FIELD');
      const schedule = checkSchedule(scheduleFromProto(request.schedule));
      const stored = await repository.exclusive(lockKey(repository.get(name, 'workflow_name').name.full), async () => {
        const workflow = repository.get(name, 'workflow_name');
        const attributes = {
          change: 'stored',
          enabled: String(schedule.enabled),
          cron: schedule.cron,
          timezone: schedule.timezone,
          overlap: schedule.overlap,
          catchUp: schedule.catchUp,
        };
        return repository.putSchedule(
          workflow,
          schedule,
          auditFirst(AuditEventType.AUDIT_EVENT_TYPE_SCHEDULE_CHANGED, workflow.name.full, context.identity, attributes),
        );
      });
      logger.info({ workflow: stored.name.full, cron: schedule.cron, timezone: schedule.timezone, enabled: schedule.enabled }, 'workflow schedule stored');
      return { schedule: scheduleToProto(schedule) };
    },

    async resealWorkflows(_request, context) {
      let workflowsResealed = 0;
      let workflowsCurrent = 0;
      const workflowsLeft: string[] = [];
      for (const listed of repository.list()) {
        const outcome = await repository.exclusive(lockKey(listed.name.full), async () => {
          let workflow: StoredWorkflow;
          try {
            workflow = repository.get(listed.name.full);
          } catch (error) {
            if (error instanceof NotFoundError) return 'current'; // deleted since the list was taken: nothing to re-seal
            throw error;
          }
          if (workflow.configuration === undefined) return `${workflow.name.full}: invalid (${workflow.invalidReason})`;
          const configuration = structuredClone(workflow.configuration);
          const collected = collectSecretSlots(configuration, (slot) => isSealed(slot.value));
          if (collected.slots.length === 0) return 'current';
          const request = { workflow: undefined, slots: collected.slots, workflowName: workflow.name.full };
          const { slots } = await call(secrets(), 'sealConfiguration', request, { deadlineMs: SEAL_DEADLINE_MS, signal: context.signal });
          if (slots.every((slot, index) => slot.value === collected.slots[index]?.value)) return 'current';
          if (!workflow.directory.writable) return `${workflow.name.full}: in the read-only startup directory ${workflow.directory.path}`;
          collected.apply(slots, 'secrets service (SealConfiguration)');
          const beforeWrite = auditFirst(AuditEventType.AUDIT_EVENT_TYPE_WORKFLOW_CONFIG_PUSHED, workflow.name.full, context.identity, { change: 'resealed' });
          await repository.reseal(workflow, configuration, fileTextOf(configuration), beforeWrite);
          return 'resealed';
        });
        if (outcome === 'resealed') workflowsResealed++;
        else if (outcome === 'current') workflowsCurrent++;
        else workflowsLeft.push(outcome);
      }
      logger.info({ workflowsResealed, workflowsCurrent, workflowsLeft: workflowsLeft.length }, 'stored workflows re-sealed under the active key');
      return { workflowsResealed, workflowsCurrent, workflowsLeft };
    },

    getSchedule(request) {
      const workflow = repository.get(checkWorkflowName(request.workflowName, 'workflow_name'), 'workflow_name');
      if (workflow.scheduleProblem !== '') {
        throw new FailedPreconditionError(`the schedule file of workflow '${workflow.name.full}' is invalid: ${workflow.scheduleProblem}`);
      }
      if (workflow.schedule === undefined) throw new NotFoundError('schedule of workflow', workflow.name.full);
      return Promise.resolve({ schedule: scheduleToProto(workflow.schedule) });
    },
  };
}

/** loom.v1.WorkflowStore, deployable alone (`loom serve --services config-store`) or with the others. */
export const configStoreModule: ServiceModule<'datasource' | 'startup'> = {
  name: 'config-store',
  fullName: 'loom.v1.WorkflowStore',
  configSections: ['datasource', 'startup'],
  async create({ config, logger, clients }): Promise<ServiceInstance> {
    const repository = await WorkflowRepository.open({
      root: config.datasource.filesystemRoot,
      startupDirectory: config.startup.workflows.directory ?? config.datasource.filesystemRoot,
      historyKeep: config.datasource.history.keep,
      logger,
    });
    let appender: AuditAppender | undefined;
    const implementation = configStoreImplementation({
      repository,
      secrets: () => clients.get('secrets'),
      audit: () => (appender ??= new AuditAppender(clients.get('audit'))),
      logger,
    });
    return {
      addToServer(server) {
        server.addService('loom.v1.WorkflowStore', WorkflowStoreService, implementation);
      },
      close: () => Promise.resolve(),
    };
  },
};
