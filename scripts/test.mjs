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
import { testTimes, timesTable, writeTestRun } from './test-times.mjs';

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
/** Each step's wall time, for the record of the whole run (`.loom/test-run.json`, docs/test-times.md). */
const phases = [];

/** Things to stop before this process ends, however it ends (the Neo4j pool). */
const cleanups = [];

async function exit(code) {
  for (const cleanup of cleanups.splice(0)) await cleanup();
  process.exit(code);
}

/** Runs a command with this process's output; resolves with its exit code. Never blocks this process's event loop. */
function run(command, args, env) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: 'inherit', env });
    child.once('error', reject);
    child.once('close', (code) => resolve(code ?? 1));
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
// the format check (one core) beside the build (the other)
await Promise.all([step('npm', ['run', 'format:check'], env, 'format check'), step('node', ['scripts/transpile.mjs'], env, 'build')]);
// The whole repository's lint and typecheck each in one process, not one a project: a project's lint or typecheck
// spent most of its time starting and reading the shared declarations (lint 271 s and typecheck 120 s of task time for
// 26 projects, against 59 s and 14 s whole). The lint runs before any test, as eslint walks the folders the executor's
// tests write loom's state in. Both read the generated contracts and the packages' sources. The build above is
// scripts/transpile.mjs: tsc's JavaScript for every package's dist (what the loom binary and the services the tests
// start as processes run), without checking types a second time or writing declarations nothing here reads.
await step('npm', ['run', 'lint'], env, 'lint');
// One pool of Neo4j servers for every package's tests (their vitest global setup takes it from LOOM_NEO4J_POOL,
// vitest.neo4j-pool.ts): the run starts as many JVMs as test files used Neo4j at once, across the packages.
const { NEO4J_POOL_ENV, startNeo4jPool } = await import('@loom/testing');
const pool = await startNeo4jPool();
cleanups.push(() => pool.close());
env[NEO4J_POOL_ENV] = pool.address;
// the typecheck (one core) beside the tests, its verdict taken once they end; the builds and code generation the
// tests depend on are done, so nx runs the test targets alone
const typecheckBegun = performance.now();
// the console's pages are browser code (DOM, JSX) in a program of their own: checked after the repository's, on the same core
const typecheck = run('npx', ['tsc', '-p', 'tsconfig.typecheck.json'], env)
  .then((code) => (code === 0 ? run('npx', ['tsc', '-p', 'services/console/web/tsconfig.json'], env) : code))
  .then((code) => {
    phases.push({ phase: 'typecheck (beside the tests)', seconds: Math.round((performance.now() - typecheckBegun) / 100) / 10 });
    return code;
  });
// one nx run of every project's tests: two runs side by side (the executor's and the CLI's first) put four vitest
// processes on two cores, and nlp-training's training worker then missed vitest's 60 s call to its main process
await step('npx', ['nx', 'run-many', '-t', 'test', '--exclude-task-dependencies', '--output-style=stream-without-prefixes', ...extra], env, 'tests');
const typecheckCode = await typecheck;
if (typecheckCode !== 0) {
  log("the typecheck failed (its errors are above, among the tests' output)");
  await exit(typecheckCode);
}
log(`Neo4j servers the tests borrowed: ${pool.started} started for the run`);
await pool.close();
// the slow suites, visible in every run (a project whose tests nx took from its cache shows its last real run)
log(`test wall time of each project, slowest first:\n${timesTable(testTimes())}`);
const whole = { seconds: Math.round((performance.now() - started) / 100) / 10, phases, projects: extra.length === 0, date: new Date().toISOString() };
writeTestRun(whole);
log(`npm test took ${whole.seconds} s: ${phases.map(({ phase, seconds }) => `${phase} ${seconds} s`).join(', ')}`);
