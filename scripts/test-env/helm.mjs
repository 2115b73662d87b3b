#!/usr/bin/env node
// The tools the deploy project's tests run: helm, built from its Go module into the tools cache
// (once; a second run finds the binary and builds nothing), and Debian's docker-compose (1.29,
// for `docker-compose config`) and yamllint. Run directly, it prints the environment for the
// tests (`export $(node scripts/test-env/helm.mjs)`, then run one deploy test file).
import { join } from 'node:path';
import { ensurePackages } from './apt.mjs';
import { toolsCacheDir } from './cache.mjs';
import { ensureGoBinary } from './go.mjs';
import { printEnvWhenRun } from './log.mjs';

const HELM_MODULE = 'helm.sh/helm/v3';
const HELM_VERSION = 'v3.22.0';
/** helm v3.22.0's go.mod says `go 1.26.0`. */
const HELM_GO = '1.26';

/** The cached helm binary, built with `go install` when missing. */
function ensureHelm() {
  return ensureGoBinary({
    tool: 'helm',
    dir: join(toolsCacheDir(), `helm-${HELM_VERSION}`),
    name: 'helm',
    target: `${HELM_MODULE}/cmd/helm@${HELM_VERSION}`,
    // as helm's Makefile links it: no symbol table (87 MB otherwise), and `helm version` saying v3.22.0 rather than
    // the branch's v3.22
    ldflags: `-s -w -X ${HELM_MODULE}/internal/version.version=${HELM_VERSION}`,
    minimumGo: HELM_GO,
  });
}

/** Environment for the deploy tests: LOOM_HELM; docker-compose and yamllint installed from Debian when missing. */
export async function ensureDeployTools() {
  ensurePackages(['docker-compose', 'yamllint']);
  return { LOOM_HELM: ensureHelm() };
}

await printEnvWhenRun(import.meta.url, ensureDeployTools, 'prepare the deploy tools');
