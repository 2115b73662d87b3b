// CPU time of npm test's slowest test files, each run alone (issue 48, the test suite's time): both cores are busy
// for the whole test phase of a full run, so only less CPU work makes it shorter, and a file's wall time under
// contention says little about its work. Each file runs by itself (`npx vitest run <file>` in its package), its CPU
// the user + system time of vitest and every process it started and waited for (forks, script hosts, the JVMs of the
// Neo4j pool, nats-server, loom binaries): /proc's cutime + cstime of this process. Against a baseline in the same
// run: a file of a few cheap tests (vitest's own cost of a file), whose CPU every file pays once.
// BENCH_TEST_FILES=<path>,<path> runs those files instead of the list below (paths from the repository root);
// BENCH_SHARED=<package dir>,... also runs those packages' whole tests with and without shared modules
// (vitest --no-isolate, what SHARED_MODULES in vitest.shared.ts sets) and prints both.
import { spawnSync } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stripVTControlCharacters } from 'node:util';
import { ensureNats } from '../scripts/test-env/nats.mjs';
import { ensureNeo4j } from '../scripts/test-env/neo4j.mjs';
import { ensurePostgres } from '../scripts/test-env/postgres.mjs';
import { ensureDeployTools } from '../scripts/test-env/helm.mjs';
import { statCpuSeconds } from './thread-cpu.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
/** The slowest files of docs/test-times.md when issue 48's last point began. */
const SLOW_FILES = [
  'services/executor/test/python-script.test.ts',
  'services/cli/test/durable-messages.test.ts',
  'libs/testing/test/neo4j.test.ts',
  'services/executor/test/adversarial.test.ts',
  'services/executor/test/relations-bounded.test.ts',
  'libs/testing/test/neo4j-pool.test.ts',
  'services/executor/test/warm-interpreters.test.ts',
  'libs/postgres/test/embedded-postgres.test.ts',
  'services/cli/test/failures-durable.test.ts',
  'libs/messaging/test/cluster.test.ts',
  'deploy/test/compose-topology.test.ts',
  'libs/postgres/test/in-memory-connection.test.ts',
  'services/executor/test/relations.test.ts',
  'services/cli/test/executor-cluster.test.ts',
  'libs/nlp-training/test/train-slice.test.ts',
];
const BASELINE = 'libs/foundation/src/json-path.test.ts';
const list = (value) => (value ?? '').split(',').filter((entry) => entry !== '');
const files = list(process.env.BENCH_TEST_FILES);
const sharedPackages = list(process.env.BENCH_SHARED);

// the CPU time of the children this process waited for
const childCpuSeconds = () => statCpuSeconds('/proc/self/stat', true);

/** The package directory of a test file: the folder above its test/ or src/. */
function packageOf(file) {
  const parts = file.split('/');
  const at = parts.findIndex((part) => part === 'test' || part === 'src');
  return parts.slice(0, at).join('/');
}

/** Runs vitest in `dir` with `args`; its wall and CPU seconds and the number of tests vitest reports passed. */
function vitest(dir, args, env) {
  const started = performance.now();
  const cpuBefore = childCpuSeconds();
  const run = spawnSync('npx', ['vitest', 'run', ...args], { cwd: join(root, dir), env, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  const wall = (performance.now() - started) / 1000;
  const cpu = childCpuSeconds() - cpuBefore;
  const output = stripVTControlCharacters(`${run.stdout}${run.stderr}`);
  const passed = Number(/Tests\s+(?:\d+ failed \| )?(\d+) passed/.exec(output)?.[1] ?? 0);
  if (run.status !== 0) throw new Error(`vitest run ${args.join(' ')} in ${dir} exited ${run.status}:\n${output.slice(-3000)}`);
  return { wall, cpu, passed };
}

const env = { ...process.env };
for (const ensure of [ensurePostgres, ensureNats, ensureNeo4j, ensureDeployTools]) Object.assign(env, await ensure());

console.log(`${cpus().length} cores, load average ${loadavg()[0].toFixed(2)} at the start`);
const baseline = vitest(packageOf(BASELINE), [relative(packageOf(BASELINE), BASELINE)], env);
console.log(`baseline ${BASELINE}: ${baseline.cpu.toFixed(1)} CPU-s, ${baseline.wall.toFixed(1)} s wall (${baseline.passed} tests)`);

const rows = [];
for (const file of files.length > 0 ? files : SLOW_FILES) {
  const dir = packageOf(file);
  const result = vitest(dir, [relative(dir, file)], env);
  rows.push({ file, ...result });
  console.log(
    `${file}: ${result.cpu.toFixed(1)} CPU-s (${(result.cpu / baseline.cpu).toFixed(1)}x the baseline), ${result.wall.toFixed(1)} s wall, ${result.passed} tests, load ${loadavg()[0].toFixed(2)}`,
  );
}
console.log('\nby CPU, most first:');
for (const row of [...rows].sort((a, b) => b.cpu - a.cpu)) console.log(`  ${row.cpu.toFixed(1).padStart(6)} CPU-s  ${row.file}`);

for (const dir of sharedPackages) {
  const isolated = vitest(dir, ['--isolate'], env);
  const shared = vitest(dir, ['--no-isolate'], env);
  console.log(
    `${dir}: isolated ${isolated.cpu.toFixed(1)} CPU-s (${isolated.wall.toFixed(1)} s wall), shared modules ${shared.cpu.toFixed(1)} CPU-s (${shared.wall.toFixed(1)} s wall): ${((shared.cpu / isolated.cpu) * 100).toFixed(0)}%; ${isolated.passed} and ${shared.passed} tests pass`,
  );
}
console.log(`load average ${loadavg()[0].toFixed(2)} at the end`);
