#!/usr/bin/env node
// The NATS server the tests start (libs/testing/src/nats.ts, JetStream on): nats-server built from its Go module into
// the tools cache (once; a second run finds the binary and builds nothing), or $LOOM_NATS_SERVER when it is set.
// Run directly, it prints the line to export:
//   export $(node scripts/test-env/nats.mjs)
import { accessSync, constants } from 'node:fs';
import { join } from 'node:path';
import { toolsCacheDir } from './cache.mjs';
import { ensureGoBinary } from './go.mjs';
import { TestEnvError, log, printEnvWhenRun } from './log.mjs';

const NATS_MODULE = 'github.com/nats-io/nats-server/v2';
/** The nats-server the tests run; Debian bookworm's 2.9.10 predates JetStream fixes loom's tests lean on (see docs/decisions.md). */
export const NATS_SERVER_VERSION = 'v2.15.2';
/** nats-server v2.15.2's go.mod says `go 1.26.0`. */
const NATS_GO = '1.26';

/** The cached nats-server binary, built with `go install` when missing. */
function ensureNatsServer() {
  return ensureGoBinary({
    tool: 'nats-server',
    dir: join(toolsCacheDir(), `nats-server-${NATS_SERVER_VERSION}`),
    name: 'nats-server',
    target: `${NATS_MODULE}@${NATS_SERVER_VERSION}`,
    // no symbol table, as the project's release build; the version it reports comes from the module's build info
    ldflags: '-s -w',
    minimumGo: NATS_GO,
  });
}

/** Environment for the tests: LOOM_NATS_SERVER, the nats-server binary (the given one when already set). */
export async function ensureNats() {
  const given = process.env.LOOM_NATS_SERVER;
  if (given) {
    try {
      accessSync(given, constants.X_OK);
    } catch (error) {
      throw new TestEnvError(`LOOM_NATS_SERVER=${given} is not an executable file: unset it to build nats-server ${NATS_SERVER_VERSION}`, { cause: error });
    }
    log(`nats-server: LOOM_NATS_SERVER is set; using ${given}`);
    return { LOOM_NATS_SERVER: given };
  }
  return { LOOM_NATS_SERVER: ensureNatsServer() };
}

await printEnvWhenRun(import.meta.url, ensureNats, 'build nats-server');
