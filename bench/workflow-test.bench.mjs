// Wall time of `loom workflow test examples/` (issue 53, the Measure): every shipped example's tests through the dry run,
// in the CLI's own process, as a CI job runs them (the built binary, a fresh process each run). Against baselines in
// the same run: the binary started to print its version (the fixed cost of a `loom` process with the same
// --no-node-snapshot re-run), and the cheap examples alone (those npm test runs: no Python interpreter, no embedded
// graph). Each test's own time comes from --output json. BENCH_RUNS runs of each (default 3), the median shown.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { statCpuSeconds } from './thread-cpu.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const loom = join(root, 'services', 'cli', 'bin', 'loom.js');
const examples = join(root, 'examples');
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
// the examples npm test leaves out (services/cli/test/workflow-tests.test.ts DEAR)
const DEAR = ['python-pipeline.test.yaml', 'relations.test.yaml'];

// the CPU time of the children this process waited for
const childCpuMs = () => statCpuSeconds('/proc/self/stat', true) * 1000;

/** Runs `loom <args>` in a fresh process; its wall and CPU time in ms and its JSON output when it printed some. */
function timed(args) {
  const started = performance.now();
  const cpuBefore = childCpuMs();
  const run = spawnSync(process.execPath, [loom, ...args], { cwd: root, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  const ms = performance.now() - started;
  const cpuMs = childCpuMs() - cpuBefore;
  if (run.status !== 0) throw new Error(`loom ${args.join(' ')} exited ${run.status}: ${run.stderr}${run.stdout.slice(0, 2000)}`);
  let json;
  try {
    json = JSON.parse(run.stdout);
  } catch {
    json = undefined;
  }
  return { ms, cpuMs, json };
}

/** The run of median wall time. */
function median(runs) {
  const sorted = [...runs].sort((a, b) => a.ms - b.ms);
  return sorted[Math.floor(sorted.length / 2)];
}

const load = () =>
  loadavg()
    .map((value) => value.toFixed(2))
    .join(' ');
console.log(`load average before: ${load()} (2 cores shared)`);
const cheap = readdirSync(examples)
  .filter((file) => file.endsWith('.test.yaml') && !DEAR.includes(file))
  .map((file) => join('examples', file));

const baseline = [];
const cheapRuns = [];
const wholeRuns = [];
let last;
for (let run = 0; run < RUNS; run++) {
  baseline.push(timed(['--version']));
  cheapRuns.push(timed(['--output', 'json', 'workflow', 'test', ...cheap]));
  const whole = timed(['--output', 'json', 'workflow', 'test', 'examples/']);
  wholeRuns.push(whole);
  last = whole.json;
}

const seconds = (ms) => `${(ms / 1000).toFixed(2)} s`;
console.log(`runs: ${RUNS}, medians`);
const line = (label, runs) => {
  const { ms, cpuMs } = median(runs);
  const base = median(baseline);
  return `${label}: wall ${seconds(ms)} (${(ms / base.ms).toFixed(1)}x the baseline), CPU ${seconds(cpuMs)}`;
};
console.log(line('baseline: loom --version (a loom process started, nothing run)', baseline));
console.log(line(`cheap examples (npm test's ${cheap.length} files)`, cheapRuns));
console.log(line(`loom workflow test examples/ (${last.files} files, ${last.tests} tests, ${last.passed} passed)`, wholeRuns));
const byFile = new Map();
for (const result of last.results) byFile.set(result.file, (byFile.get(result.file) ?? 0) + result.ms);
for (const [file, ms] of [...byFile].sort((a, b) => b[1] - a[1])) console.log(`  ${file}: ${seconds(ms)} of tests (last run)`);
console.log(`load average after: ${load()}`);
