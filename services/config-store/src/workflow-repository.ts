import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import {
  ConflictError,
  FailedPreconditionError,
  LoomError,
  parseWorkflowJson,
  newStoredName,
  NotFoundError,
  parseStoredName,
  type Schedule,
  type StoredName,
  ValidationError,
  type WorkflowConfiguration,
} from '@loom/domain';
import { type Logger } from '@loom/telemetry';
import { type LoadedWorkflow, sha256Of, WorkflowDirectory, type WorkflowMetadataFile } from './workflow-directory.js';
import { KeyedLock } from '@loom/foundation';
import { type KeptVersion, WorkflowHistory } from './workflow-history.js';

/** A workflow the store knows: stored by a push, or found on disk at start. */
export interface StoredWorkflow {
  readonly name: StoredName;
  /** The configuration as stored (sealed); undefined for an invalid file. */
  readonly configuration: WorkflowConfiguration | undefined;
  readonly invalidReason: string;
  readonly metadata: WorkflowMetadataFile;
  readonly schedule: Schedule | undefined;
  readonly scheduleProblem: string;
  /** Where its files are. */
  readonly directory: WorkflowDirectory;
}

/** A change to the set of stored workflows. */
export type WorkflowChange = { readonly type: 'put'; readonly workflow: StoredWorkflow } | { readonly type: 'delete'; readonly workflow: StoredWorkflow };

/** Told of a change once every check passed and before anything is written; throwing refuses the change. */
export type BeforeChange = (metadata: WorkflowMetadataFile) => Promise<void>;

/** A version a workflow never had, or one pruned from its history (NOT_FOUND), saying which versions are kept. */
export class WorkflowVersionNotFoundError extends LoomError {
  readonly kind = 'not-found';

  constructor(
    readonly workflowName: string,
    readonly version: number,
    readonly pruned: boolean,
    readonly kept: { readonly oldest: number; readonly newest: number; readonly keep: number },
  ) {
    const keptText = `versions ${kept.oldest} to ${kept.newest} are kept`;
    super(
      pruned
        ? `version ${version} of workflow '${workflowName}' was pruned: the config store keeps the last ${kept.keep} (loom.datasource.history.keep); ${keptText}`
        : `workflow '${workflowName}' has no version ${version}; ${keptText}`,
    );
  }
}

/** A version of a workflow as kept: its configuration (sealed), metadata and stored text. */
export interface WorkflowVersion {
  readonly configuration: WorkflowConfiguration;
  readonly metadata: WorkflowMetadataFile;
  readonly text: string;
}

/** Where the store keeps and finds workflows. */
export interface WorkflowRepositoryOptions {
  /** `loom.datasource.filesystemRoot`: pushes are written here. */
  readonly root: string;
  /** `loom.startup.workflows.directory`: loaded at start; never written to when it is not the root. */
  readonly startupDirectory: string;
  /** `loom.datasource.history.keep`: versions of each workflow kept under `<root>/.history` (default 50). */
  readonly historyKeep?: number;
  readonly logger: Logger;
}

/** Versions of each workflow kept when `loom.datasource.history.keep` is not given. */
export const DEFAULT_HISTORY_KEEP = 50;

/**
 * The stored workflows, in memory and on disk. Changes to one workflow run one at a time (a lock per workflow name);
 * every change is durable on disk before the index and the watchers see it.
 */
export class WorkflowRepository {
  private readonly byName = new Map<string, StoredWorkflow>();
  private readonly watchers = new Set<(change: WorkflowChange) => void>();
  private readonly locks = new KeyedLock();

  private constructor(
    private readonly root: WorkflowDirectory,
    private readonly history: WorkflowHistory,
    private readonly logger: Logger,
  ) {}

  /** Loads the startup directory and the root; a file that cannot be used is listed as invalid and left untouched. */
  static async open(options: WorkflowRepositoryOptions): Promise<WorkflowRepository> {
    const root = new WorkflowDirectory(resolve(options.root), true);
    const repository = new WorkflowRepository(root, new WorkflowHistory(root.path, options.historyKeep ?? DEFAULT_HISTORY_KEEP), options.logger);
    const directories = [root];
    const startup = resolve(options.startupDirectory);
    if (startup !== root.path) directories.unshift(new WorkflowDirectory(startup, false));
    // the root comes last: a workflow pushed since shadows the startup directory's copy of the same name
    for (const directory of directories) {
      const scan = await directory.load();
      if (scan.removedLeftovers > 0)
        options.logger.warn({ directory: directory.path, files: scan.removedLeftovers }, 'removed temp files of writes cut off by a crash');
      for (const loaded of scan.workflows) repository.addLoaded(directory, loaded);
    }
    const all = [...repository.byName.values()];
    const invalid = all.filter((workflow) => workflow.configuration === undefined);
    for (const workflow of invalid)
      options.logger.warn(
        { workflow: workflow.name.full, directory: workflow.directory.path, reason: workflow.invalidReason },
        'stored workflow is invalid; left as it is',
      );
    options.logger.info({ root: options.root, startupDirectory: options.startupDirectory, workflows: all.length, invalid: invalid.length }, 'workflows loaded');
    return repository;
  }

  private addLoaded(directory: WorkflowDirectory, loaded: LoadedWorkflow): void {
    if (loaded.metadataRecovered && directory.writable && loaded.metadata.version > 1) {
      this.logger.warn(
        { workflow: loaded.stem, version: loaded.metadata.version },
        'workflow metadata did not match its configuration (a push cut off by a crash); version recovered',
      );
    }
    const parsed = parseStoredName(loaded.stem);
    this.byName.set(loaded.stem, {
      name: parsed ?? { full: loaded.stem, base: loaded.stem, uuid: '' },
      configuration: loaded.configuration,
      invalidReason: loaded.invalidReason,
      metadata: loaded.metadata,
      schedule: loaded.schedule,
      scheduleProblem: loaded.scheduleProblem,
      directory,
    });
  }

  /** Every workflow, ordered by stored name. */
  list(): StoredWorkflow[] {
    return [...this.byName.values()].sort((a, b) => (a.name.full < b.name.full ? -1 : a.name.full > b.name.full ? 1 : 0));
  }

  /** The workflow stored under exactly this name, or undefined. */
  find(storedName: string): StoredWorkflow | undefined {
    return this.byName.get(storedName);
  }

  /** A workflow by its stored name `<workflow_name>_<uuid>`, or by `<workflow_name>` when only one has it. */
  get(name: string, field = 'name'): StoredWorkflow {
    const exact = this.byName.get(name);
    if (exact !== undefined) return exact;
    const matches = this.withBase(name);
    if (matches.length === 1) return matches[0] as StoredWorkflow;
    if (matches.length > 1) {
      throw ValidationError.of(
        field,
        `'${name}' names ${matches.length} workflows (${matches.map((match) => match.name.full).join(', ')}); give the full name`,
        'AMBIGUOUS_NAME',
      );
    }
    throw new NotFoundError('workflow', name);
  }

  private withBase(base: string): StoredWorkflow[] {
    return [...this.byName.values()].filter((workflow) => workflow.name.base === base);
  }

  /**
   * The stored name a pushed workflow gets: its own when it ends in `_<uuid>`, that of the one stored workflow with
   * the same bare name, or a new one.
   */
  storedNameFor(name: string): StoredName {
    const parsed = parseStoredName(name);
    if (parsed !== undefined || this.byName.has(name)) return parsed ?? (this.byName.get(name) as StoredWorkflow).name;
    const matches = this.withBase(name);
    if (matches.length > 1) return this.get(name).name; // throws AMBIGUOUS_NAME
    return matches[0]?.name ?? newStoredName(name);
  }

  /** Serialises the changes to one workflow (held across validation and sealing, so two first pushes agree on a uuid). */
  exclusive<T>(base: string, task: () => Promise<T>): Promise<T> {
    return this.locks.run(base, task);
  }

  /**
   * Writes a new version of a workflow (call inside exclusive), `text` being its `.workflow.json` form. `expectedVersion` 0 means it must not exist yet; a
   * stale one is a ConflictError (ABORTED). A text identical to the stored version's (a valid one) is not written: the
   * stored workflow is answered `unchanged`, no watcher told, `beforeWrite` not called. `beforeWrite` sees the new
   * metadata once every check passed and may refuse the write by throwing (the audit record goes first). The files are
   * durable before this resolves.
   */
  async put(
    name: StoredName,
    configuration: WorkflowConfiguration,
    text: string,
    options: {
      expectedVersion: number | undefined;
      pushedBy: string;
      variableReferences?: Readonly<Record<string, string>>;
      sourceSha256?: string;
      beforeWrite?: BeforeChange;
    },
  ): Promise<{ workflow: StoredWorkflow; unchanged: boolean }> {
    const current = this.byName.get(name.full);
    const currentVersion = current?.metadata.version ?? 0;
    if (options.expectedVersion !== undefined && options.expectedVersion !== currentVersion) {
      throw new ConflictError(`workflow '${name.full}' is at version ${currentVersion}, not the expected ${options.expectedVersion}; read it again and retry`);
    }
    const sha256 = sha256Of(text);
    if (current?.configuration !== undefined && current.metadata.sha256 === sha256) return { workflow: current, unchanged: true };
    const metadata: WorkflowMetadataFile = {
      version: currentVersion + 1,
      sha256,
      updatedAt: new Date().toISOString(),
      pushedBy: options.pushedBy,
      ...(options.variableReferences === undefined || Object.keys(options.variableReferences).length === 0
        ? {}
        : { variableReferences: options.variableReferences }),
      ...(options.sourceSha256 === undefined ? {} : { sourceSha256: options.sourceSha256 }),
    };
    const inRoot = current?.directory === this.root ? current : undefined;
    await options.beforeWrite?.(metadata);
    if (inRoot === undefined) await this.root.removeSchedule(name.full); // a schedule left behind by a deleted workflow of this name
    if (current !== undefined && current.configuration !== undefined) await this.keepCurrent(current);
    // kept first: the workflow's own files are what counts, and a version kept but never made current is written again
    await this.history.record(name.full, text, metadata);
    await this.root.writeWorkflow(name.full, text, metadata);
    const stored: StoredWorkflow = {
      name,
      configuration,
      invalidReason: '',
      metadata,
      schedule: inRoot?.schedule,
      scheduleProblem: inRoot?.scheduleProblem ?? '',
      directory: this.root,
    };
    this.byName.set(name.full, stored);
    this.emit({ type: 'put', workflow: stored });
    return { workflow: stored, unchanged: false };
  }

  /**
   * Rewrites a stored workflow with its values re-sealed (call inside exclusive), keeping its version: the configuration
   * means the same, only its sealed text changed, so watchers that act on new versions do not restart anything. The
   * sha256 and updatedAt change. A crash between the two renames shows at the next start as a new version (see load).
   */
  async reseal(workflow: StoredWorkflow, configuration: WorkflowConfiguration, text: string, beforeWrite?: BeforeChange): Promise<StoredWorkflow> {
    const current = this.byName.get(workflow.name.full);
    if (current !== workflow) throw new ConflictError(`workflow '${workflow.name.full}' changed while it was re-sealed; re-seal again`);
    if (!current.directory.writable)
      throw new FailedPreconditionError(`workflow '${workflow.name.full}' is in the startup directory ${current.directory.path}, which loom only reads`);
    const metadata: WorkflowMetadataFile = { ...current.metadata, sha256: sha256Of(text), updatedAt: new Date().toISOString() };
    await beforeWrite?.(metadata);
    if (current.directory === this.root) await this.history.record(workflow.name.full, text, metadata);
    await current.directory.writeWorkflow(workflow.name.full, text, metadata);
    const stored: StoredWorkflow = { ...current, configuration, metadata };
    this.byName.set(workflow.name.full, stored);
    this.emit({ type: 'put', workflow: stored });
    return stored;
  }

  /**
   * Removes a workflow's three files (call inside exclusive); one found in the read-only startup directory is refused.
   * `beforeRemove` sees the metadata of the version removed and may refuse by throwing.
   */
  async delete(workflow: StoredWorkflow, expectedVersion: number | undefined, beforeRemove?: BeforeChange): Promise<void> {
    const current = this.byName.get(workflow.name.full);
    if (current === undefined) throw new NotFoundError('workflow', workflow.name.full);
    if (expectedVersion !== undefined && expectedVersion !== current.metadata.version) {
      throw new ConflictError(`workflow '${workflow.name.full}' is at version ${current.metadata.version}, not the expected ${expectedVersion}`);
    }
    if (!current.directory.writable) {
      throw new FailedPreconditionError(
        `workflow '${workflow.name.full}' is in the startup directory ${current.directory.path}, which loom only reads; remove its files there`,
      );
    }
    await beforeRemove?.(current.metadata);
    await current.directory.removeWorkflow(workflow.name.full);
    await this.history.remove(workflow.name.full);
    this.byName.delete(workflow.name.full);
    this.emit({ type: 'delete', workflow: current });
  }

  /** Stores a workflow's schedule (call inside exclusive); `beforeWrite` sees the workflow's metadata and may refuse by throwing. */
  async putSchedule(workflow: StoredWorkflow, schedule: Schedule, beforeWrite?: BeforeChange): Promise<StoredWorkflow> {
    const current = this.byName.get(workflow.name.full);
    if (current === undefined) throw new NotFoundError('workflow', workflow.name.full);
    if (!current.directory.writable) {
      throw new FailedPreconditionError(`workflow '${workflow.name.full}' is in the startup directory ${current.directory.path}, which loom only reads`);
    }
    await beforeWrite?.(current.metadata);
    await current.directory.writeSchedule(workflow.name.full, schedule);
    const updated: StoredWorkflow = { ...current, schedule, scheduleProblem: '' };
    this.byName.set(workflow.name.full, updated);
    this.emit({ type: 'put', workflow: updated });
    return updated;
  }

  /**
   * Keeps the current version in the history when it is not there yet: stored before history was kept, or found in
   * the startup directory. Its file is copied as it is.
   */
  private async keepCurrent(current: StoredWorkflow): Promise<void> {
    if (await this.history.has(current.name.full, current.metadata.version)) return;
    const text = await readFile(current.directory.workflowPath(current.name.full), 'utf8');
    await this.history.record(current.name.full, text, current.metadata);
  }

  /** The kept versions of a workflow, newest first; the current one always among them. */
  async versions(workflow: StoredWorkflow): Promise<WorkflowMetadataFile[]> {
    const kept = await this.history.versions(workflow.name.full, workflow.metadata.version);
    if (kept[0]?.version === workflow.metadata.version) return [workflow.metadata, ...kept.slice(1)];
    return [workflow.metadata, ...kept];
  }

  /** A kept version of a workflow; WorkflowVersionNotFoundError for one it never had or one pruned. */
  async version(workflow: StoredWorkflow, version: number): Promise<WorkflowVersion> {
    if (version === workflow.metadata.version && workflow.configuration !== undefined) {
      const text = await readFile(workflow.directory.workflowPath(workflow.name.full), 'utf8');
      return { configuration: workflow.configuration, metadata: workflow.metadata, text };
    }
    const kept: KeptVersion | undefined =
      version >= 1 && version <= workflow.metadata.version ? await this.history.read(workflow.name.full, version) : undefined;
    if (kept === undefined) {
      const versions = await this.versions(workflow);
      const oldest = versions.at(-1)?.version ?? workflow.metadata.version;
      const bounds = { oldest, newest: workflow.metadata.version, keep: this.history.keep };
      throw new WorkflowVersionNotFoundError(workflow.name.full, version, version >= 1 && version < oldest, bounds);
    }
    return { configuration: parseWorkflowJson(kept.text), metadata: kept.metadata, text: kept.text };
  }

  /**
   * The current workflows, and from the same instant on every change, to `listener` (called synchronously, in order).
   * Returns the snapshot and the function that stops the changes.
   */
  watch(listener: (change: WorkflowChange) => void): { snapshot: StoredWorkflow[]; stop: () => void } {
    this.watchers.add(listener);
    return { snapshot: this.list(), stop: () => this.watchers.delete(listener) };
  }

  private emit(change: WorkflowChange): void {
    for (const watcher of this.watchers) watcher(change);
  }
}
