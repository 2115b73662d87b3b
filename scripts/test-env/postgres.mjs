// The PostgreSQL the tests use: $LOOM_TEST_DATABASE_URL when set; else a Debian cluster of the
// project's own ("loomtest", trust authentication on loopback only), created and started when missing.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { ensurePackages } from './apt.mjs';
import { TestEnvError, log, printEnvWhenRun } from './log.mjs';

const CLUSTER = 'loomtest';
const DATABASE = 'test';

function run(command, args, what) {
  const result = spawnSync(command, args, { encoding: 'utf8' });
  if (result.error !== undefined || result.status !== 0) {
    throw new TestEnvError(`${what} failed: ${result.error?.message ?? (result.stderr || result.stdout).trim()}`);
  }
  return result.stdout;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** The newest PostgreSQL major version Debian installed (a directory under /usr/lib/postgresql). */
function installedVersion() {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).filter((name) => existsSync(join(root, name, 'bin', 'postgres'))) : [];
  if (versions.length === 0) throw new TestEnvError('no PostgreSQL server under /usr/lib/postgresql after installing postgresql');
  return versions.sort((a, b) => Number(b) - Number(a))[0];
}

function clusterPort(version) {
  const conf = `/etc/postgresql/${version}/${CLUSTER}/postgresql.conf`;
  if (!existsSync(conf)) return undefined;
  const match = /^\s*port\s*=\s*(\d+)/m.exec(readFileSync(conf, 'utf8'));
  return match === null ? undefined : Number(match[1]);
}

function ready(port) {
  return spawnSync('pg_isready', ['-q', '-h', '127.0.0.1', '-p', String(port)]).status === 0;
}

/** Environment for the tests: LOOM_TEST_DATABASE_URL. */
export async function ensurePostgres() {
  const given = process.env.LOOM_TEST_DATABASE_URL;
  if (given) {
    log('PostgreSQL: LOOM_TEST_DATABASE_URL is set; using it');
    return { LOOM_TEST_DATABASE_URL: given };
  }
  ensurePackages(['postgresql']);
  const version = installedVersion();
  let port = clusterPort(version);
  if (port === undefined) {
    port = await freePort();
    log(`PostgreSQL: creating the test cluster ${version}/${CLUSTER} on 127.0.0.1:${port}`);
    // trust on loopback and the local socket only: a throwaway cluster for tests, never a deployment
    run(
      'pg_createcluster',
      [
        ...['-p', String(port)],
        ...['-o', 'fsync=off', '-o', 'max_connections=300'],
        ...[version, CLUSTER, '--', '--auth-local=trust', '--auth-host=trust', '--no-sync'],
      ],
      'pg_createcluster',
    );
  }
  if (!ready(port)) {
    log(`PostgreSQL: starting the test cluster ${version}/${CLUSTER} on 127.0.0.1:${port}`);
    run('pg_ctlcluster', ['--skip-systemctl-redirect', version, CLUSTER, 'start'], `pg_ctlcluster ${version} ${CLUSTER} start`);
    for (let tries = 0; tries < 60 && !ready(port); tries += 1) await new Promise((resolve) => setTimeout(resolve, 500));
    if (!ready(port)) throw new TestEnvError(`the PostgreSQL test cluster ${version}/${CLUSTER} did not answer on 127.0.0.1:${port}`);
  }
  const psql = (sql) => run('psql', ['-X', '-q', '-t', '-A', '-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '-d', 'postgres', '-c', sql], 'psql');
  if (psql(`SELECT 1 FROM pg_database WHERE datname = '${DATABASE}'`).trim() === '') psql(`CREATE DATABASE ${DATABASE}`);
  return { LOOM_TEST_DATABASE_URL: `postgresql://postgres@127.0.0.1:${port}/${DATABASE}` };
}

await printEnvWhenRun(import.meta.url, ensurePostgres, 'start the PostgreSQL for the tests');
