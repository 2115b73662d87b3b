#!/usr/bin/env node
// `npm test`: installs (when missing) and starts what the tests need, then runs the format check, the lint and the
// typecheck of the whole repository, every project's build and every project's test target, with the servers' and
// tools' locations in the environment. Nothing needs doing by hand first, on a fresh machine or a second time.
import { spawn } from 'node:child_process';
import { ensureChromium } from './test-env/chromium.mjs';
import { ensureClients } from './test-env/clients.mjs';
import { ensureGrpcTools } from './test-env/grpcurl.mjs';
import { ensureDeployTools } from './test-env/helm.mjs';
import { ensureNats } from './test-env/nats.mjs';
import { ensureNeo4j } from './test-env/neo4j.mjs';
import { ensurePostgres } from './test-env/postgres.mjs';
import { TestEnvError, log } from './test-env/log.mjs';
import { failedTests, testPlan, testTimes, timesTable, writeTestRun } from './test-times.mjs';

async function prepare() {
  const env = {};
  Object.assign(env, await ensurePostgres());
  Object.assign(env, await ensureDeployTools());
  Object.assign(env, await ensureGrpcTools());
  Object.assign(env, await ensureNeo4j());
  Object.assign(env, await ensureNats());
  Object.assign(env, await ensureClients());
  Object.assign(env, await ensureChromium());
  return env;
}

const started = performance.now();
const startedAt = new Date();
/** Each step's wall time, for the record of the whole run (`.loom/test-run.json`, docs/test-times.md). */
const phases = [];

/** Things to stop before this process ends, however it ends (the Neo4j pool). */
const cleanups = [];

async function exit(code) {
  for (const cleanup of cleanups.splice(0)) await cleanup();
  process.exit(code);
}

/** The commands running now: a step that fails ends the others (two lanes run at once) before this process ends. */
const running = new Set();
cleanups.push(() => {
  for (const child of running) child.kill('SIGTERM');
});

/** Runs a command with this process's output; resolves with its exit code. Never blocks this process's event loop. */
function run(command, args, env) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: 'inherit', env });
    running.add(child);
    child.once('error', reject);
    child.once('close', (code) => {
      running.delete(child);
      resolve(code ?? 1);
    });
  });
}

/** Runs one step of `npm test`, timed; a step that fails ends the run with its exit code. */
async function step(command, args, env, phase) {
  const begun = performance.now();
  const code = await run(command, args, env);
  if (code !== 0) await exit(code);
  phases.push({ phase, seconds: Math.round((performance.now() - begun) / 100) / 10 });
}

let prepared;
try {
  prepared = await prepare();
  phases.push({ phase: 'prepare the servers and tools', seconds: Math.round((performance.now() - started) / 100) / 10 });
} catch (error) {
  if (!(error instanceof TestEnvError)) throw error;
  log(`cannot prepare the tests: ${error.message}`);
  process.exit(1);
}
for (const [name, value] of Object.entries(prepared)) log(`${name}=${value}`);
// this process starts Neo4j servers too (the pool below), so the tools' locations go into its own environment as well
Object.assign(process.env, prepared);
const env = { ...process.env };
const extra = process.argv.slice(2);
// Two lanes, one a core (scripts/test-times.mjs, testPlan). One lints: eslint in one thread (two threads each built the
// TypeScript program of the typed rules: 146 CPU-s against 90, and slower in wall time too). The other checks the
// format, builds and typechecks, then runs the tests that share modules, which write nothing in the folders eslint
// walks. The build is scripts/transpile.mjs: tsc's JavaScript for every package's dist (what the loom binary and the
// services the tests start as processes run), without checking types a second time or writing declarations nothing
// here reads; the typecheck is one program for the whole repository (and one for the console's pages, browser code).
// Then each lane runs its share of the other projects' tests, one project at a time (each project's vitest runs two
// files at once), so two vitest processes share the two cores (four at once made nlp-training's training worker miss
// vitest's 60 s call to its main process). nx alone orders a run by the projects' dependents, so the executor and
// the CLI, the longest, came last and the run ended on one project alone: each lane's longest project runs first, in
// an nx run of its own, then the rest in one more. The contracts are generated once first, as both lanes read them.
const testArgs = ['nx', 'run-many', '-t', 'test', '--exclude-task-dependencies', '--output-style=stream-without-prefixes'];
/** Runs the tests of these projects, one at a time; its exit code. */
const runTests = (projects) => run('npx', [...testArgs, '--parallel=1', `--projects=${projects.join(',')}`], env);
/** A lane's projects, its first alone, the rest after it even when it failed; the first failed run's code, or 0. */
async function runLane([first, ...rest]) {
  const code = first === undefined ? 0 : await runTests([first]);
  const restCode = rest.length === 0 ? 0 : await runTests(rest);
  return code !== 0 ? code : restCode;
}
/** When the first test began, for the record of the tests' wall time. */
let testsBegun;
const testsBegin = () => (testsBegun ??= performance.now());

await step('npx', ['nx', 'run', 'contracts:generate', '--output-style=static'], env, 'generate the contracts');
// One pool of Neo4j servers for every package's tests (their vitest global setup takes it from LOOM_NEO4J_POOL,
// vitest.neo4j-pool.ts): the run starts as many JVMs as test files used Neo4j at once, across the packages. It is
// @loom/testing's, so it starts once the build has written that package's dist.
let pool;
let poolStarted;
const poolReady = new Promise((resolve) => (poolStarted = resolve));
const plan = testPlan();
const lint = step('npm', ['run', 'lint:sources'], env, 'lint');
const codes = await Promise.all([
  (async () => {
    await lint;
    await poolReady;
    if (extra.length > 0) return 0;
    testsBegin();
    return runLane(plan.lanes[0]);
  })(),
  (async () => {
    await step('npm', ['run', 'format:check'], env, 'format check');
    await step('node', ['scripts/transpile.mjs'], env, 'build');
    const { NEO4J_POOL_ENV, startNeo4jPool } = await import('@loom/testing');
    pool = await startNeo4jPool();
    cleanups.push(() => pool.close());
    env[NEO4J_POOL_ENV] = pool.address;
    poolStarted();
    await step('npm', ['run', 'typecheck:sources'], env, 'typecheck');
    if (extra.length > 0) {
      // `npm test -- <nx options>` runs the tests they name after the lint, in nx's own order and parallelism
      await lint;
      testsBegin();
      return run('npx', [...testArgs, ...extra], env);
    }
    testsBegin();
    const earlyCode = await runTests(plan.early);
    const laneCode = await runLane(plan.lanes[1]);
    return earlyCode !== 0 ? earlyCode : laneCode;
  })(),
]);
phases.push({ phase: 'tests', seconds: Math.round((performance.now() - testsBegun) / 100) / 10 });
const failed = codes.find((code) => code !== 0);
if (failed !== undefined) {
  const failures = failedTests(startedAt);
  log(
    failures.length === 0
      ? 'a test run failed (its output is above; no project recorded a failed test, so look there for a project that ended early)'
      : `a test run failed (its output is above). The failed tests:\n${failures.map((line) => `  ${line}`).join('\n')}`,
  );
  await exit(failed);
}
log(`Neo4j servers the tests borrowed: ${pool.started} started for the run`);
await pool.close();
// the slow suites, visible in every run (a project whose tests nx took from its cache shows its last real run)
log(`test wall time of each project, slowest first:\n${timesTable(testTimes())}`);
const whole = { seconds: Math.round((performance.now() - started) / 100) / 10, phases, projects: extra.length === 0, date: new Date().toISOString() };
writeTestRun(whole);
log(`npm test took ${whole.seconds} s: ${phases.map(({ phase, seconds }) => `${phase} ${seconds} s`).join(', ')}`);
