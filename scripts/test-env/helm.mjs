#!/usr/bin/env node
// The tools the deploy project's tests run: helm, built from its Go module into the tools cache
// (once; a second run finds the binary and builds nothing), and Debian's docker-compose (1.29,
// for `docker-compose config`), yamllint and nats-server (2.9.10, for `nats-server -t`). Run
// directly, it prints the environment for the tests (`export $(node scripts/test-env/helm.mjs)`,
// then run one deploy test file).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { ensurePackages } from './apt.mjs';
import { toolsCacheDir } from './cache.mjs';
import { TestEnvError, log, printEnvWhenRun } from './log.mjs';

const HELM_MODULE = 'helm.sh/helm/v3';
const HELM_VERSION = 'v3.22.0';
/** helm v3.22.0's go.mod says `go 1.26.0`; Go 1.21 and later fetch that toolchain themselves (GOTOOLCHAIN=auto). */
const HELM_GO = '1.26';
const TOOLCHAIN_SWITCHING_GO = '1.21';
/** Where the Go project's own release installs itself, not always on PATH. */
const LOCAL_GO = '/usr/local/go/bin/go';

function goVersion(go) {
  const result = spawnSync(go, ['env', 'GOVERSION'], { encoding: 'utf8' });
  if (result.error !== undefined || result.status !== 0) return undefined;
  const match = /^go(\d+)\.(\d+)/.exec(result.stdout.trim());
  return match === null ? undefined : `${match[1]}.${match[2]}`;
}

function atLeast(version, minimum) {
  const [major, minor] = version.split('.').map(Number);
  const [wantMajor, wantMinor] = minimum.split('.').map(Number);
  return major > wantMajor || (major === wantMajor && minor >= wantMinor);
}

/** A Go that can build helm: `go` on PATH, else /usr/local/go, else Debian's golang-go. */
function findGo() {
  const candidates = () => ['go', LOCAL_GO].map((go) => ({ go, version: goVersion(go) })).filter(({ version }) => version !== undefined);
  let found = candidates();
  if (found.length === 0) {
    ensurePackages(['golang-go']);
    found = candidates();
  }
  if (found.length === 0) throw new TestEnvError(`no Go after installing golang-go: install Go ${HELM_GO} (the Go project's own release) to build helm`);
  const usable = found.find(({ version }) => atLeast(version, HELM_GO)) ?? found.find(({ version }) => atLeast(version, TOOLCHAIN_SWITCHING_GO));
  if (usable === undefined) {
    throw new TestEnvError(
      `Go ${found[0].version} (${found[0].go}) is too old to build helm ${HELM_VERSION}, which needs Go ${HELM_GO} ` +
        `(Debian bookworm's golang-go is 1.19; Go ${TOOLCHAIN_SWITCHING_GO} or later would fetch ${HELM_GO} itself): ` +
        `install Go ${HELM_GO} (the Go project's own release) into /usr/local/go`,
    );
  }
  return usable.go;
}

/** The cached helm binary, built with `go install` when missing. */
function ensureHelm() {
  const dir = join(toolsCacheDir(), `helm-${HELM_VERSION}`);
  const helm = join(dir, 'helm');
  if (existsSync(helm)) {
    log(`helm: ${helm}`);
    return helm;
  }
  const go = findGo();
  log(`helm: building ${HELM_MODULE}/cmd/helm@${HELM_VERSION} with ${go} (a few minutes the first time)`);
  // built beside the target and renamed into place, so a build cut short never leaves a binary behind
  mkdirSync(dir, { recursive: true });
  const staging = mkdtempSync(`${dir}.build-`);
  try {
    const started = Date.now();
    const result = spawnSync(
      go,
      [
        'install',
        // as helm's Makefile links it: no symbol table (87 MB otherwise), and `helm version` saying
        // v3.22.0 rather than the branch's v3.22
        `-ldflags=-s -w -X ${HELM_MODULE}/internal/version.version=${HELM_VERSION}`,
        `${HELM_MODULE}/cmd/helm@${HELM_VERSION}`,
      ],
      { stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, GOBIN: staging, CGO_ENABLED: '0' } },
    );
    if (result.error !== undefined || result.status !== 0) {
      throw new TestEnvError(`go install ${HELM_MODULE}/cmd/helm@${HELM_VERSION} failed (${result.error?.message ?? `exit ${result.status}`})`);
    }
    renameSync(join(staging, 'helm'), helm);
    log(`helm: built ${helm} in ${Math.round((Date.now() - started) / 1000)} s`);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  return helm;
}

/**
 * Environment for the deploy tests: LOOM_HELM; docker-compose, yamllint and nats-server installed from Debian when
 * missing (nats-server checks the compose file's and the chart's NATS configurations with `-t` and plays the compose
 * file's nats service; a LOOM_NATS_SERVER set by the messaging tests' setup is preferred).
 */
export async function ensureDeployTools() {
  ensurePackages(['docker-compose', 'yamllint', 'nats-server']);
  return { LOOM_HELM: ensureHelm() };
}

await printEnvWhenRun(import.meta.url, ensureDeployTools, 'prepare the deploy tools');
