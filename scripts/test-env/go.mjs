// The Go toolchain that builds the Go tools the tests run (helm, nats-server) into the tools cache.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { ensurePackages } from './apt.mjs';
import { TestEnvError, log } from './log.mjs';

/** Go 1.21 and later fetch the toolchain a module's go.mod asks for themselves (GOTOOLCHAIN=auto). */
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

/**
 * A Go that can build `tool`, whose go.mod asks for Go `minimum`: `go` on PATH, else /usr/local/go, else Debian's
 * golang-go; one older than `minimum` will do when it fetches the toolchain itself.
 */
export function findGo(tool, minimum) {
  const candidates = () => ['go', LOCAL_GO].map((go) => ({ go, version: goVersion(go) })).filter(({ version }) => version !== undefined);
  let found = candidates();
  if (found.length === 0) {
    ensurePackages(['golang-go']);
    found = candidates();
  }
  if (found.length === 0) throw new TestEnvError(`no Go after installing golang-go: install Go ${minimum} (the Go project's own release) to build ${tool}`);
  const usable = found.find(({ version }) => atLeast(version, minimum)) ?? found.find(({ version }) => atLeast(version, TOOLCHAIN_SWITCHING_GO));
  if (usable === undefined) {
    throw new TestEnvError(
      `Go ${found[0].version} (${found[0].go}) is too old to build ${tool}, which needs Go ${minimum} ` +
        `(Debian bookworm's golang-go is 1.19; Go ${TOOLCHAIN_SWITCHING_GO} or later would fetch ${minimum} itself): ` +
        `install Go ${minimum} (the Go project's own release) into /usr/local/go`,
    );
  }
  return usable.go;
}

/**
 * The binary `name` in the tools cache directory `dir`, built with `go install <target>` (with `ldflags`) when missing.
 * `tool` names it in messages; `minimumGo` is the Go its go.mod asks for.
 */
export function ensureGoBinary({ tool, dir, name, target, ldflags, minimumGo }) {
  const binary = join(dir, name);
  if (existsSync(binary)) {
    log(`${tool}: ${binary}`);
    return binary;
  }
  const go = findGo(tool, minimumGo);
  log(`${tool}: building ${target} with ${go} (a minute or more the first time)`);
  // built beside the target and renamed into place, so a build cut short never leaves a binary behind
  mkdirSync(dir, { recursive: true });
  const staging = mkdtempSync(`${dir}.build-`);
  try {
    const started = Date.now();
    const result = spawnSync(go, ['install', `-ldflags=${ldflags}`, target], {
      stdio: ['ignore', 'inherit', 'inherit'],
      env: { ...process.env, GOBIN: staging, CGO_ENABLED: '0' },
    });
    if (result.error !== undefined || result.status !== 0) {
      throw new TestEnvError(`go install ${target} failed (${result.error?.message ?? `exit ${result.status}`})`);
    }
    renameSync(join(staging, name), binary);
    log(`${tool}: built ${binary} in ${Math.round((Date.now() - started) / 1000)} s`);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  return binary;
}
