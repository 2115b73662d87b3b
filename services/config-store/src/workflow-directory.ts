import { createHash } from 'node:crypto';
import { readdir, readFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import {
  LoomError,
  parseScheduleJson,
  parseWorkflowJson,
  type Schedule,
  serializeScheduleJson,
  validateWorkflow,
  ValidationError,
  type WorkflowConfiguration,
} from '@loom/domain';
import { isAtomicWriteLeftover, syncDirectory, writeFileAtomic, writeFilesAtomic } from '@loom/foundation';
import { classifyFile } from './workflow-names.js';

/** The companion `<name>.json` file of a workflow. */
export interface WorkflowMetadataFile {
  /** 1 for the first push, one more for each later one. */
  readonly version: number;
  /** Hex SHA-256 of the `.workflow.json` file's bytes. */
  readonly sha256: string;
  /** ISO 8601, UTC. */
  readonly updatedAt: string;
  /** Identity that pushed this version ('' when unknown: a file placed by hand, or recovered). */
  readonly pushedBy: string;
  /** The secret slots that were `$$<variable>` references when pushed, by JSON path (absent: none, or unknown). */
  readonly variableReferences?: Readonly<Record<string, string>>;
  /** Hex SHA-256 of the text this version was pushed or applied as (a compact or full file's), when it came as text. */
  readonly sourceSha256?: string;
}

/** A workflow as found on disk at start. */
export interface LoadedWorkflow {
  /** File name stem: `<workflow_name>_<uuid>`. */
  readonly stem: string;
  /** The configuration; undefined when the file is invalid. */
  readonly configuration: WorkflowConfiguration | undefined;
  /** Why the file is invalid ('' when valid). */
  readonly invalidReason: string;
  readonly metadata: WorkflowMetadataFile;
  readonly schedule: Schedule | undefined;
  /** Why the `.scheduler.json` file cannot be used ('' when there is none or it is fine). */
  readonly scheduleProblem: string;
  /** The metadata file was missing, unreadable or did not match the configuration (a push cut off by a crash). */
  readonly metadataRecovered: boolean;
}

/** What loading a directory found besides the workflows. */
export interface DirectoryScan {
  readonly workflows: LoadedWorkflow[];
  /** Temp files of writes cut off by a crash, removed (only in a writable directory). */
  readonly removedLeftovers: number;
}

/** Hex SHA-256 of a text's UTF-8 bytes. */
export function sha256Of(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** The three files of each workflow in one directory: `<stem>.workflow.json`, `<stem>.json`, `<stem>.scheduler.json`. */
export class WorkflowDirectory {
  constructor(
    readonly path: string,
    /** A read-only directory is loaded but never written to (the startup directory when it is not the storage root). */
    readonly writable: boolean,
  ) {}

  workflowPath(stem: string): string {
    return join(this.path, `${stem}.workflow.json`);
  }

  metadataPath(stem: string): string {
    return join(this.path, `${stem}.json`);
  }

  schedulePath(stem: string): string {
    return join(this.path, `${stem}.scheduler.json`);
  }

  /**
   * Stores a configuration and its metadata durably. The configuration is renamed into place first: after a crash in
   * between, the next start sees a metadata file that does not match it and recovers (see load).
   */
  writeWorkflow(stem: string, configurationText: string, metadata: WorkflowMetadataFile): Promise<void> {
    return writeFilesAtomic([
      { path: this.workflowPath(stem), data: configurationText },
      { path: this.metadataPath(stem), data: `${JSON.stringify(metadata, null, 2)}\n` },
    ]);
  }

  writeSchedule(stem: string, schedule: Schedule): Promise<void> {
    return writeFileAtomic(this.schedulePath(stem), serializeScheduleJson(schedule));
  }

  /** Removes the three files, the configuration first (so a crash in between leaves no workflow, only companions). */
  async removeWorkflow(stem: string): Promise<void> {
    await rm(this.workflowPath(stem), { force: true });
    await rm(this.metadataPath(stem), { force: true });
    await rm(this.schedulePath(stem), { force: true });
    await syncDirectory(this.path);
  }

  /** Removes a schedule left by a deleted workflow of the same name, before that name is used again. */
  async removeSchedule(stem: string): Promise<void> {
    await rm(this.schedulePath(stem), { force: true });
  }

  /**
   * Reads every workflow of the directory. A file that does not parse or validate is returned as invalid with the
   * reason and is left exactly as it is. A missing directory is an empty one.
   */
  async load(): Promise<DirectoryScan> {
    let names: string[];
    try {
      names = await readdir(this.path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { workflows: [], removedLeftovers: 0 };
      throw error;
    }
    let removedLeftovers = 0;
    if (this.writable) {
      for (const name of names.filter(isAtomicWriteLeftover)) {
        await rm(join(this.path, name), { force: true });
        removedLeftovers++;
      }
    }
    const present = new Set(names);
    const stems = names.flatMap((name) => {
      const file = classifyFile(name);
      return file?.kind === 'workflow' ? [file.stem] : [];
    });
    const workflows = await Promise.all(stems.sort().map((stem) => this.loadOne(stem, present)));
    return { workflows, removedLeftovers };
  }

  private async loadOne(stem: string, present: ReadonlySet<string>): Promise<LoadedWorkflow> {
    const path = this.workflowPath(stem);
    const [text, info] = await Promise.all([readFile(path, 'utf8'), stat(path)]);
    const sha256 = sha256Of(text);
    let configuration: WorkflowConfiguration | undefined;
    let invalidReason = '';
    try {
      configuration = parseWorkflowJson(text);
      validateWorkflow(configuration);
      if (configuration.name !== stem) {
        throw ValidationError.of('name', `is '${configuration.name}' but the file is named '${stem}.workflow.json'`, 'NAME_MISMATCH');
      }
    } catch (error) {
      configuration = undefined;
      invalidReason = describeProblem(error);
    }

    const stored = present.has(`${stem}.json`) ? await readMetadata(this.metadataPath(stem)) : undefined;
    const metadataRecovered = stored?.sha256 !== sha256;
    const metadata: WorkflowMetadataFile = metadataRecovered
      ? { version: (stored?.version ?? 0) + 1, sha256, updatedAt: info.mtime.toISOString(), pushedBy: '' }
      : stored;

    let schedule: Schedule | undefined;
    let scheduleProblem = '';
    if (present.has(`${stem}.scheduler.json`)) {
      try {
        schedule = parseScheduleJson(await readFile(this.schedulePath(stem), 'utf8'));
      } catch (error) {
        scheduleProblem = describeProblem(error);
      }
    }
    return { stem, configuration, invalidReason, metadata, schedule, scheduleProblem, metadataRecovered };
  }
}

/** A metadata file's content, or undefined when it is missing or not metadata. */
export async function readMetadata(path: string): Promise<WorkflowMetadataFile | undefined> {
  try {
    const value = JSON.parse(await readFile(path, 'utf8')) as Partial<WorkflowMetadataFile>;
    if (!Number.isSafeInteger(value.version) || typeof value.sha256 !== 'string' || typeof value.updatedAt !== 'string') return undefined;
    const references = value.variableReferences;
    const variableReferences =
      typeof references === 'object' && references !== null && Object.values(references).every((name) => typeof name === 'string') ? references : undefined;
    return {
      version: value.version as number,
      sha256: value.sha256,
      updatedAt: value.updatedAt,
      pushedBy: typeof value.pushedBy === 'string' ? value.pushedBy : '',
      ...(variableReferences === undefined ? {} : { variableReferences }),
      ...(typeof value.sourceSha256 === 'string' ? { sourceSha256: value.sourceSha256 } : {}),
    };
  } catch {
    return undefined; // unreadable metadata is rebuilt from the configuration, which is what counts
  }
}

/** One line saying why a file cannot be used: the first violations with their paths. */
export function describeProblem(error: unknown): string {
  if (error instanceof ValidationError) {
    const shown = error.violations
      .slice(0, 3)
      .map((violation) => (violation.field === '' ? violation.description : `${violation.field}: ${violation.description}`));
    const more = error.violations.length - shown.length;
    return shown.join('; ') + (more > 0 ? ` (and ${more} more)` : '');
  }
  if (error instanceof LoomError || error instanceof Error) return error.message;
  return String(error);
}
