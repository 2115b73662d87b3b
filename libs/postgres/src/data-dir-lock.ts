import { linkSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DataDirectoryInUseError } from './errors.js';

/** Name of the lock file inside an embedded PostgreSQL data directory. */
export const LOCK_FILE_NAME = 'loom.lock';

/** Lock files this process holds, so a pid equal to ours is told apart from a previous run that had the same pid (containers). */
const heldByThisProcess = new Set<string>();

/** A held data-directory lock. */
export interface DataDirLock {
  readonly path: string;
  /** Removes the lock file if it is still ours. */
  release(): void;
}

/**
 * Takes `<dataDir>/loom.lock` for this process (PGlite itself takes no lock, and two processes on one directory corrupt it).
 * The file holds the owner's pid; a file whose process is gone is taken over; a live owner is a DataDirectoryInUseError.
 */
export function lockDataDir(dataDir: string): DataDirLock {
  const path = join(dataDir, LOCK_FILE_NAME);
  for (let attempt = 1; ; attempt++) {
    if (tryCreate(path)) {
      heldByThisProcess.add(path);
      return {
        path,
        release() {
          if (!heldByThisProcess.delete(path)) return;
          if (readOwner(path) === process.pid) rmSync(path, { force: true });
        },
      };
    }
    const owner = readOwner(path);
    if (owner === 'missing' && attempt < 3) continue; // released between our two looks
    const stale = typeof owner === 'number' && (owner === process.pid ? !heldByThisProcess.has(path) : !isAlive(owner));
    if (!stale || attempt >= 3) throw new DataDirectoryInUseError(dataDir, typeof owner === 'number' ? owner : undefined);
    rmSync(path, { force: true });
  }
}

/** Creates the lock file with our pid already in it: written beside it, then hard-linked, which fails if the lock exists. */
function tryCreate(path: string): boolean {
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, `${process.pid}\n`, { mode: 0o600 });
  try {
    linkSync(temporary, path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  } finally {
    rmSync(temporary, { force: true });
  }
}

/** The pid in a lock file, 'missing' when there is no file, undefined when it cannot be read as a pid. */
function readOwner(path: string): number | 'missing' | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'missing' : undefined;
  }
  const pid = Number.parseInt(text.trim(), 10);
  return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to another user
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
