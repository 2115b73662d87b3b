import { readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { isAtomicWriteLeftover, writeFilesAtomic } from '@loom/foundation';
import { readMetadata, type WorkflowMetadataFile } from './workflow-directory.js';

/** Name of the folder of kept versions inside the storage root (a dot name: the root's loader passes it over). */
export const HISTORY_DIRECTORY = '.history';

const VERSION_FILE = /^([1-9][0-9]*)\.json$/;

/** One kept version: the `.workflow.json` text as it was stored, and its metadata. */
export interface KeptVersion {
  readonly text: string;
  readonly metadata: WorkflowMetadataFile;
}

/**
 * The kept versions of every workflow, `<root>/.history/<stem>/<version>.workflow.json` beside `<version>.json` (the
 * metadata as the workflow's own companion file had it), each pair written atomically like the workflow's own files.
 * At most `keep` versions of a workflow are kept: recording one removes those `keep` or more below it.
 */
export class WorkflowHistory {
  readonly path: string;

  constructor(
    root: string,
    /** `loom.datasource.history.keep`. */
    readonly keep: number,
  ) {
    this.path = join(root, HISTORY_DIRECTORY);
  }

  private directoryOf(stem: string): string {
    return join(this.path, stem);
  }

  /** Keeps a version (replacing a copy of the same number: a write cut off before the workflow's own files), then prunes. */
  async record(stem: string, text: string, metadata: WorkflowMetadataFile): Promise<void> {
    const directory = this.directoryOf(stem);
    await writeFilesAtomic([
      { path: join(directory, `${metadata.version}.workflow.json`), data: text },
      { path: join(directory, `${metadata.version}.json`), data: `${JSON.stringify(metadata, null, 2)}\n` },
    ]);
    const names = await readdir(directory);
    const pruned = names.filter((name) => {
      if (isAtomicWriteLeftover(name)) return true;
      const version = Number.parseInt(name, 10);
      return Number.isSafeInteger(version) && version <= metadata.version - this.keep;
    });
    // the metadata goes first: a version without it is not listed, so a crash in between shows no half version
    const metadataFirst = [...pruned.filter((name) => VERSION_FILE.test(name)), ...pruned.filter((name) => !VERSION_FILE.test(name))];
    for (const name of metadataFirst) await rm(join(directory, name), { force: true });
  }

  /** Whether a version is kept. */
  async has(stem: string, version: number): Promise<boolean> {
    return (await readMetadata(join(this.directoryOf(stem), `${version}.json`))) !== undefined;
  }

  /** The kept versions' metadata, newest first, up to `upTo` (a version above the current one was cut off by a crash). */
  async versions(stem: string, upTo: number): Promise<WorkflowMetadataFile[]> {
    let names: string[];
    try {
      names = await readdir(this.directoryOf(stem));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
    const numbers = names.flatMap((name) => {
      const match = VERSION_FILE.exec(name);
      const version = match === null ? NaN : Number(match[1]);
      return Number.isSafeInteger(version) && version <= upTo && names.includes(`${version}.workflow.json`) ? [version] : [];
    });
    const read = await Promise.all(numbers.map((version) => readMetadata(join(this.directoryOf(stem), `${version}.json`))));
    return read.filter((metadata): metadata is WorkflowMetadataFile => metadata !== undefined).sort((a, b) => b.version - a.version);
  }

  /** A kept version, or undefined when it is not kept. */
  async read(stem: string, version: number): Promise<KeptVersion | undefined> {
    const directory = this.directoryOf(stem);
    const metadata = await readMetadata(join(directory, `${version}.json`));
    if (metadata === undefined) return undefined;
    try {
      return { text: await readFile(join(directory, `${version}.workflow.json`), 'utf8'), metadata };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  }

  /** Removes every kept version of a workflow (it was deleted). */
  async remove(stem: string): Promise<void> {
    await rm(this.directoryOf(stem), { recursive: true, force: true });
  }
}
