import { randomBytes } from 'node:crypto';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { ValidationError } from './errors.js';

/** One file of writeFilesAtomic. */
export interface AtomicFileEntry {
  readonly path: string;
  readonly data: string | Uint8Array;
  readonly mode?: number;
}

/**
 * Writes a file so that readers see either the old content or the whole new content, and the
 * new content survives a crash once this resolves: temp file, fsync, rename, fsync of the directory.
 */
export function writeFileAtomic(path: string, data: string | Uint8Array, options: { mode?: number } = {}): Promise<void> {
  return writeFilesAtomic([{ path, data, ...(options.mode === undefined ? {} : { mode: options.mode }) }]);
}

/**
 * writeFileAtomic for several files of one directory, with one fsync of the directory: every temp file is written and
 * synced (in parallel), then each is renamed in the order given. Each file on its own is old or whole-new; after a
 * crash before this resolves, a prefix of the list may be new and the rest old, so put first the file whose presence
 * makes the others meaningful.
 */
export async function writeFilesAtomic(entries: readonly AtomicFileEntry[]): Promise<void> {
  const [first] = entries;
  if (first === undefined) return;
  const directory = dirname(first.path);
  const outside = entries.find((entry) => dirname(entry.path) !== directory);
  if (outside !== undefined)
    throw new ValidationError([{ field: 'path', description: `${outside.path} is not in ${directory}; files written together share one directory` }]);
  await mkdir(directory, { recursive: true, mode: 0o700 });
  // rename is atomic only within one filesystem, so the temp files live beside their targets
  const temporaries = entries.map((entry) => join(directory, `.${basename(entry.path)}.${randomBytes(6).toString('hex')}.tmp`));
  try {
    await Promise.all(entries.map((entry, index) => writeSynced(temporaries[index] as string, entry.data, entry.mode ?? 0o644)));
    for (const [index, entry] of entries.entries()) await rename(temporaries[index] as string, entry.path);
  } catch (error) {
    await Promise.all(temporaries.map((temporary) => rm(temporary, { force: true })));
    throw error;
  }
  await syncDirectory(directory);
}

/** Makes the directory's entries (created, renamed or removed files) durable. */
export async function syncDirectory(directory: string): Promise<void> {
  const handle = await open(directory, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

async function writeSynced(path: string, data: string | Uint8Array, mode: number): Promise<void> {
  const file = await open(path, 'wx', mode);
  try {
    await file.writeFile(data);
    await file.sync();
  } finally {
    await file.close();
  }
}

/** True for the name of a temp file writeFilesAtomic leaves behind when the process dies mid-write. */
export function isAtomicWriteLeftover(fileName: string): boolean {
  return /^\..+\.[0-9a-f]{12}\.tmp$/.test(fileName);
}
