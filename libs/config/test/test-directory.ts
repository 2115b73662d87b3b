import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach } from 'vitest';

/** The temporary directory of the running test, and a writer for files in it. */
export interface TestDirectory {
  /** The running test's directory. */
  readonly path: string;
  /** Writes a file in the running test's directory and returns its path. */
  readonly file: (name: string, text: string) => string;
}

/** Gives each test of the file a fresh temporary directory (made before it, removed after it); call it at the top level. */
export function testDirectory(prefix: string): TestDirectory {
  let current: string | undefined;
  beforeEach(() => {
    current = mkdtempSync(join(tmpdir(), prefix));
  });
  afterEach(() => {
    if (current !== undefined) rmSync(current, { recursive: true, force: true });
    current = undefined;
  });
  const path = (): string => {
    if (current === undefined) throw new Error('the test directory exists only while a test runs');
    return current;
  };
  return {
    get path() {
      return path();
    },
    file: (name, text) => {
      const written = join(path(), name);
      writeFileSync(written, text);
      return written;
    },
  };
}
