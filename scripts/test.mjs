#!/usr/bin/env node
// `npm test`: installs (when missing) and starts what the tests need, then runs the format check and
// every project's lint, typecheck and test targets with the servers' and tools' locations in the
// environment. Nothing needs doing by hand first, on a fresh machine or a second time.
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
step('npx', ['nx', 'run-many', '-t', 'lint', 'typecheck', 'test', '--output-style=stream-without-prefixes', ...extra], env);
// the slow suites, visible in every run (a project whose tests nx took from its cache shows its last real run)
log(`test wall time of each project, slowest first:\n${timesTable(testTimes())}`);
