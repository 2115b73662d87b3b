#!/usr/bin/env node
// What the clients' tests (clients/test) need, installed when missing and kept in the tools cache: a Python venv with the
// Python client's pinned requirements (clients/python/requirements.txt), protoc-gen-go and protoc-gen-go-grpc built
// with `go install`, and the Go client's modules downloaded. Then the code of both clients generated from proto/ (never
// committed): clients/python/src/loom/v1 by grpcio-tools' protoc, clients/go/loomv1 by the repository's buf with the
// two plugins. Run directly, it prints the environment for the tests:
//   export $(node scripts/test-env/clients.mjs)
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensurePackages } from './apt.mjs';
import { toolsCacheDir } from './cache.mjs';
import { ensureGoBinary, findGo } from './go.mjs';
import { TestEnvError, log, printEnvWhenRun } from './log.mjs';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const PYTHON_CLIENT = join(REPO, 'clients', 'python');
const GO_CLIENT = join(REPO, 'clients', 'go');

/** protoc-gen-go, from google.golang.org/protobuf (the runtime version in clients/go/go.mod). */
const PROTOC_GEN_GO = { module: 'google.golang.org/protobuf', version: 'v1.36.12', target: 'google.golang.org/protobuf/cmd/protoc-gen-go' };
/** protoc-gen-go-grpc, its own module; v1.6's code needs google.golang.org/grpc 1.64 or later (go.mod has 1.83). */
const PROTOC_GEN_GO_GRPC = { version: 'v1.6.2', target: 'google.golang.org/grpc/cmd/protoc-gen-go-grpc' };
/** clients/go/go.mod says `go 1.25.0`, as google.golang.org/grpc v1.83 asks. */
const CLIENT_GO = '1.25';

/** Runs a command to completion with its output on this process's stderr; throws naming `what` when it fails. */
function run(command, args, what, options = {}) {
  const result = spawnSync(command, args, { stdio: ['ignore', 2, 2], ...options });
  if (result.error !== undefined || result.status !== 0) {
    throw new TestEnvError(`${what} failed (${result.error?.message ?? `exit ${result.status}`}): ${command} ${args.join(' ')}`);
  }
}

/** A Python 3 whose `venv` module can make a venv with pip: python3 on PATH, with Debian's python3-venv when it lacks one. */
function findPython() {
  const works = () => spawnSync('python3', ['-c', 'import ensurepip, venv'], { stdio: 'ignore' }).status === 0;
  if (!works()) ensurePackages(['python3-venv']);
  if (!works()) throw new TestEnvError('python3 with its venv module is missing after installing python3-venv: install Python 3.11 or later');
  return 'python3';
}

/**
 * The Python of a venv in the tools cache holding clients/python/requirements.txt, made when missing. The venv is
 * named after a hash of the requirements, so a changed pin makes a new one; a venv whose install was cut short (no
 * marker file) or whose Python is gone (the machine's python3 replaced) is made again.
 */
function ensurePythonVenv() {
  const requirements = join(PYTHON_CLIENT, 'requirements.txt');
  const hash = createHash('sha256').update(readFileSync(requirements)).digest('hex').slice(0, 12);
  const venv = join(toolsCacheDir(), `python-client-${hash}`);
  const python = join(venv, 'bin', 'python');
  const done = join(venv, '.installed');
  if (existsSync(done) && spawnSync(python, ['-c', 'import grpc, grpc_tools, pytest'], { stdio: 'ignore' }).status === 0) {
    log(`python client: ${venv}`);
    return python;
  }
  rmSync(venv, { recursive: true, force: true });
  const started = Date.now();
  log(`python client: making a venv with ${requirements} in ${venv} (a minute the first time)`);
  run(findPython(), ['-m', 'venv', venv], 'python3 -m venv');
  run(python, ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '--no-input', '-r', requirements], 'pip install of the Python client');
  writeFileSync(done, `${new Date().toISOString()}\n`);
  log(`python client: venv made in ${Math.round((Date.now() - started) / 1000)} s`);
  return python;
}

/** The two protoc plugins of the Go client, built into the tools cache when missing. */
function ensureGoPlugins() {
  const dir = join(toolsCacheDir(), `go-grpc-plugins-${PROTOC_GEN_GO.version}-${PROTOC_GEN_GO_GRPC.version}`);
  const plugin = ({ target, version }, name) =>
    ensureGoBinary({ tool: name, dir, name, target: `${target}@${version}`, ldflags: '-s -w', minimumGo: CLIENT_GO });
  return { go: plugin(PROTOC_GEN_GO, 'protoc-gen-go'), grpc: plugin(PROTOC_GEN_GO_GRPC, 'protoc-gen-go-grpc') };
}

/** clients/python/src/loom/v1 from proto/, by grpcio-tools' protoc (clients/python/generate.py). */
function generatePython(python) {
  run(python, [join(PYTHON_CLIENT, 'generate.py')], 'generating the Python client');
}

/** clients/go/loomv1 from proto/loom/v1, by the repository's buf with the two Go plugins (their go_package places it). */
function generateGo(plugins) {
  const module = 'github.com/loom-dev/loom/clients/go';
  const template = {
    version: 'v2',
    plugins: [
      { local: plugins.go, out: 'clients/go', opt: [`module=${module}`] },
      { local: plugins.grpc, out: 'clients/go', opt: [`module=${module}`] },
    ],
  };
  // a proto removed since the last run leaves no code behind
  rmSync(join(GO_CLIENT, 'loomv1'), { recursive: true, force: true });
  const buf = join(REPO, 'node_modules', '.bin', 'buf');
  run(buf, ['generate', '--template', JSON.stringify(template), '--path', 'proto/loom/v1'], 'generating the Go client', { cwd: REPO });
}

/** The Go client's modules downloaded and the client compiled once, so its test spends its time on the test. */
function prepareGoModule(go) {
  run(go, ['mod', 'download'], 'go mod download of the Go client', { cwd: GO_CLIENT });
  run(go, ['vet', './...'], 'go vet of the Go client', { cwd: GO_CLIENT });
}

/**
 * Environment for the clients' tests: LOOM_CLIENTS_PYTHON (the venv's python, which runs pytest) and LOOM_CLIENTS_GO
 * (the go that runs `go test`), both clients' code generated from the current proto/.
 */
export async function ensureClients() {
  const python = ensurePythonVenv();
  generatePython(python);
  const go = findGo('the Go client', CLIENT_GO);
  generateGo(ensureGoPlugins());
  prepareGoModule(go);
  return { LOOM_CLIENTS_PYTHON: python, LOOM_CLIENTS_GO: go };
}

await printEnvWhenRun(import.meta.url, ensureClients, 'prepare the clients');
