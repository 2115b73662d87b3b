import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RunnerTask, RunnerTestFile } from 'vitest';
import type { Reporter } from 'vitest/reporters';
import { defineConfig, type UserConfig } from 'vitest/config';

const ROOT = fileURLToPath(new URL('.', import.meta.url));
/** Where each package's last test run records its wall time (read by `node scripts/test-times.mjs`). */
const TEST_TIMES_DIR = join(ROOT, '.loom', 'test-times');

/**
 * Records the wall time of the package's whole test run, from vitest's start to its end (what vitest prints as
 * Duration), with the number of files and tests, and each file's own time, so the slow suites and the slow files in
 * them are visible across the repository.
 */
function wallTimeReporter(): Reporter {
  let started = 0;
  return {
    onInit() {
      started = performance.now();
    },
    onFinished(files = [], errors = []) {
      const name = (JSON.parse(readFileSync('package.json', 'utf8')) as { name: string }).name;
      const tests = files.reduce((sum, file) => sum + countTests(file.tasks), 0);
      mkdirSync(TEST_TIMES_DIR, { recursive: true });
      const record = {
        package: name,
        seconds: Math.round((performance.now() - started) / 100) / 10,
        files: files.length,
        tests,
        date: new Date().toISOString(),
        fileTimes: files.map(fileTime).sort((a, b) => b.seconds - a.seconds),
        failures: [...files.flatMap((file) => failedTasks(file, relative(ROOT, file.filepath))), ...errors.map(unhandledFailure)],
      };
      writeFileSync(join(TEST_TIMES_DIR, `${name.replace('/', '__')}.json`), `${JSON.stringify(record)}\n`);
    },
  };
}

/**
 * A test file's time as vitest measured it: importing it (collect), its setup files and running its tests and hooks.
 * Files of a project run side by side, so these add up to more than the project's wall time.
 */
function fileTime(file: RunnerTestFile): { file: string; seconds: number; tests: number } {
  const milliseconds = (file.collectDuration ?? 0) + (file.setupDuration ?? 0) + (file.result?.duration ?? 0);
  return { file: relative(ROOT, file.filepath), seconds: Math.round(milliseconds / 100) / 10, tests: countTests(file.tasks) };
}

/** A failure as `npm test` lists it at the end of a run, where CI's tail shows it: where, and the error's first line. */
interface Failure {
  test: string;
  error: string;
}

/**
 * The failed tests under a task (a file that failed to load, a hook, a test), each named by its path of suites.
 * A suite whose hook failed is listed itself; its tests, skipped, are not.
 */
function failedTasks(task: RunnerTask, name: string): Failure[] {
  const own = task.result?.state === 'fail' && (task.type === 'test' || (task.result.errors?.length ?? 0) > 0);
  const failure = own ? [{ test: name, error: firstLine(task.result?.errors?.[0]?.message) }] : [];
  const children = 'tasks' in task ? task.tasks.flatMap((child) => failedTasks(child, `${name} > ${child.name}`)) : [];
  return [...failure, ...children];
}

/** An error vitest caught outside any test (an unhandled rejection, a worker that died). */
function unhandledFailure(error: unknown): Failure {
  const message = error instanceof Error ? error.message : (error as { message?: string } | undefined)?.message;
  return { test: '(outside any test)', error: firstLine(message ?? String(error)) };
}

function firstLine(message: string | undefined): string {
  return (message ?? 'no message').split('\n', 1)[0]!.slice(0, 300);
}

function countTests(tasks: readonly RunnerTask[]): number {
  return tasks.reduce((sum, task) => sum + (task.type === 'test' ? 1 : task.type === 'suite' ? countTests(task.tasks) : 0), 0);
}

const sourceConditions = ['@loom/source', 'node', 'import', 'default'];
// Vitest starts its workers with `--conditions <each ssr.resolve.conditions>`. With `import` among them, Node's own
// require() inside pg (CommonJS) resolves pg-pool to its ESM build and `class extends Pool` fails. Vite adds
// import/require per import by itself, so leaving them out of the SSR list changes nothing for our sources.
const ssrConditions = ['@loom/source', 'node', 'default'];

/**
 * For packages whose tests start no server and change no process-wide state: a worker runs one test file after
 * another on the modules it already loaded, instead of a new module graph for each file. Measured on these 2-core
 * machines, per package run alone: domain 10.9 → 4.7 CPU-seconds, service-kit 9.4 → 5.6,
 * foundation 4.4 → 2.4; 44 → 25 for the seven packages that use it, whose tests pass either way.
 */
export const SHARED_MODULES: UserConfig['test'] = { isolate: false };

/** Vitest config shared by every package: workspace packages resolve to their TypeScript sources. */
export function defineLoomTestConfig(overrides: UserConfig['test'] = {}): UserConfig {
  return defineConfig({
    resolve: { conditions: sourceConditions },
    ssr: { resolve: { conditions: ssrConditions, externalConditions: ['@loom/source'] } },
    test: {
      include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
      environment: 'node',
      reporters: ['default', wallTimeReporter()],
      // the run's temporary files in a directory of its own, removed at the end (vitest.scratch-dir.ts)
      // and one pool of Neo4j servers the run's files borrow from, started on the first file that asks (vitest.neo4j-pool.ts)
      globalSetup: [fileURLToPath(new URL('vitest.scratch-dir.ts', import.meta.url)), fileURLToPath(new URL('vitest.neo4j-pool.ts', import.meta.url))],
      pool: 'forks',
      // vitest's default in a run is one fork less than the cores: one on these 2-core machines, so a project's files
      // ran one after another while most of their time is spent waiting on servers (JVMs, PGlite, the loom binary)
      maxWorkers: 2,
      // a ceiling, not a measure: tests that start PGlite, a JVM or the loom binary take several times longer while the
      // machine is shared (seen: 30 s limits missed at load 18 on 2 cores); no test asserts a duration
      testTimeout: 90_000,
      // hooks start embedded databases (PGlite, PGlite with AGE): seconds alone, over 30 s on a machine shared by many builds
      hookTimeout: 120_000,
      // expect.poll waits for an outcome, never measures one: its own default of 1 s failed on a CI machine busy with
      // other projects' builds (a lease handed over, a stream's pending count), so it waits as long as a test may
      expect: { poll: { timeout: 60_000, interval: 50 } },
      ...overrides,
    },
  });
}
