#!/usr/bin/env node
// grpcurl, which the CLI's reflection test runs against an in-process loom as another team's service would meet it:
// built from its Go module into the tools cache (once; a second run finds the binary and builds nothing). Run
// directly, it prints the environment for the tests (`export $(node scripts/test-env/grpcurl.mjs)`).
import { join } from 'node:path';
import { toolsCacheDir } from './cache.mjs';
import { ensureGoBinary } from './go.mjs';
import { printEnvWhenRun } from './log.mjs';

const GRPCURL_MODULE = 'github.com/fullstorydev/grpcurl';
const GRPCURL_VERSION = 'v1.9.4';
/** grpcurl v1.9.4's go.mod says `go 1.25.0`. */
const GRPCURL_GO = '1.25';

/** The cached grpcurl binary, built with `go install` when missing. */
function ensureGrpcurl() {
  return ensureGoBinary({
    tool: 'grpcurl',
    dir: join(toolsCacheDir(), `grpcurl-${GRPCURL_VERSION}`),
    name: 'grpcurl',
    target: `${GRPCURL_MODULE}/cmd/grpcurl@${GRPCURL_VERSION}`,
    // as grpcurl's release build links it: no symbol table, and `grpcurl -version` saying v1.9.4
    ldflags: `-s -w -X main.version=${GRPCURL_VERSION}`,
    minimumGo: GRPCURL_GO,
  });
}

/** Environment for the CLI's tests: LOOM_GRPCURL. */
export async function ensureGrpcTools() {
  return { LOOM_GRPCURL: ensureGrpcurl() };
}

await printEnvWhenRun(import.meta.url, ensureGrpcTools, 'prepare grpcurl');
