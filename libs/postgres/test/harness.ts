import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterEach } from 'vitest';

/** A short random suffix for names that must not collide with other runs on a shared server. */
export function uniqueSuffix(): string {
  return randomBytes(4).toString('hex');
}

interface Closable {
  close(): Promise<void>;
}

/** Collects pools, servers and temp directories of a test and closes them in afterEach, last opened first. */
export function useCleanup(): { add<T extends Closable>(closable: T): T; tempDir(): Promise<string> } {
  const closables: Closable[] = [];
  afterEach(async () => {
    for (const closable of closables.splice(0).reverse()) await closable.close();
  });
  return {
    add(closable) {
      closables.push(closable);
      return closable;
    },
    async tempDir() {
      const dir = await mkdtemp(join(tmpdir(), 'loom-postgres-'));
      closables.push({ close: () => rm(dir, { recursive: true, force: true }) });
      return dir;
    },
  };
}

export { closedPort } from '@loom/testing';

/** Records what a component logs. */
export function recordingLogger(): {
  entries: { level: string; obj: object; msg: string }[];
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
} {
  const entries: { level: string; obj: object; msg: string }[] = [];
  return {
    entries,
    info: (obj, msg) => entries.push({ level: 'info', obj, msg }),
    warn: (obj, msg) => entries.push({ level: 'warn', obj, msg }),
  };
}
