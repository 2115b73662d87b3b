#!/usr/bin/env node
// `npm test`: installs (when missing) and starts what the tests need, then runs the format check, the lint and the
// typecheck of the whole repository, every project's build and every project's test target, with the servers' and
// tools' locations in the environment. Nothing needs doing by hand first, on a fresh machine or a second time.
import { spawnSync } from 'node:child_process';
import { ensureDeployTools } from './test-env/helm.mjs';
import { ensureNats } from './test-env/nats.mjs';
import { ensureNeo4j } from './test-env/neo4j.mjs';
import { ensurePostgres } from './test-env/postgres.mjs';
import { TestEnvError, log } from './test-env/log.mjs';
import { testTimes, timesTable } from './test-times.mjs';

async function prepare() {
  const env = {};
  Object.assign(env, await ensurePostgres());
  Object.assign(env, await ensureDeployTools());
  Object.assign(env, await ensureNeo4j());
  Object.assign(env, await ensureNats());
  return env;
}

function step(command, args, env) {
  const result = spawnSync(command, args, { stdio: 'inherit', env });
  if (result.error !== undefined) throw result.error;
  if (result.status !== 0) process.exit(result.status ?? 1);
}

let prepared;
try {
  prepared = await prepare();
} catch (error) {
  if (!(error instanceof TestEnvError)) throw error;
  log(`cannot prepare the tests: ${error.message}`);
  process.exit(1);
}
for (const [name, value] of Object.entries(prepared)) log(`${name}=${value}`);
const env = { ...process.env, ...prepared };
const extra = process.argv.slice(2);
step('npm', ['run', 'format:check'], env);
// The whole repository's lint and typecheck each in one process, not one a project: a project's lint or typecheck
// spent most of its time starting and reading the shared declarations (lint 271 s and typecheck 120 s of task time for
// 26 projects, against 59 s and 14 s whole). The lint runs before any test, as eslint walks the folders the executor's
// tests write loom's state in. Both read the generated contracts, and the typecheck the builds' declarations.
step('npx', ['nx', 'run-many', '-t', 'build', '--output-style=stream-without-prefixes'], env);
step('npm', ['run', 'lint'], env);
step('npx', ['tsc', '-p', 'tsconfig.typecheck.json'], env);
// the builds and code generation the tests depend on are done: nx runs the test targets alone
step('npx', ['nx', 'run-many', '-t', 'test', '--exclude-task-dependencies', '--output-style=stream-without-prefixes', ...extra], env);
// the slow suites, visible in every run (a project whose tests nx took from its cache shows its last real run)
log(`test wall time of each project, slowest first:\n${timesTable(testTimes())}`);
