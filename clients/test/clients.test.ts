import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LoomServe, startLoomServe } from './loom-serve.js';

/**
 * The Python and Go clients, each generated from proto/, run their own tests (pytest, `go test`) against one real
 * `loom serve`: a service identity with a static token, the address and token in their environment as LOOM_ADDRESS
 * and LOOM_TOKEN. scripts/test-env/clients.mjs installs what they need and generates their code first (`npm test`
 * does it; alone: `export $(node scripts/test-env/clients.mjs)`).
 */
const python = process.env.LOOM_CLIENTS_PYTHON;
const go = process.env.LOOM_CLIENTS_GO;
const pythonClient = fileURLToPath(new URL('../python', import.meta.url));
const goClient = fileURLToPath(new URL('../go', import.meta.url));

const IDENTITY = 'order-service';
const TOKEN = 'order-service-token-for-the-clients-test';

/** What a finished command printed and its exit code. */
interface Finished {
  readonly code: number | null;
  readonly output: string;
}

/** Runs a command to its end without blocking this process (loom's log is read meanwhile), its output interleaved. */
function runToEnd(command: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv): Promise<Finished> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const output: string[] = [];
    child.stdout.on('data', (chunk: Buffer) => output.push(chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => output.push(chunk.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, output: output.join('') }));
  });
}

if (python === undefined || go === undefined) {
  throw new Error(
    'LOOM_CLIENTS_PYTHON and LOOM_CLIENTS_GO are not set: run the tests through `npm test`, or run ' +
      '`export $(node scripts/test-env/clients.mjs)` first (it makes the Python venv, builds the Go plugins and generates both clients)',
  );
}

let loom: LoomServe;
beforeAll(async () => {
  loom = await startLoomServe(
    ['secrets', 'config-store', 'audit', 'executor'],
    [
      `loom.auth.tokens.${IDENTITY}=${TOKEN}`,
      `loom.auth.roles.${IDENTITY}=editor,operator`,
      // the round trip's workflow prices each order in a script (processor.MessageTransformer, experimental)
      'loom.experimental.enabled=true',
      'loom.scripts.python.warmInterpreters=0',
    ],
  );
});
afterAll(async () => {
  await loom?.stop();
});

/** The clients' environment: where loom is and the token, nothing of this process's but PATH and HOME (Go's caches). */
function clientEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const { PATH, HOME, GOPATH, GOMODCACHE, GOCACHE, GOFLAGS, GOPROXY } = process.env;
  const passed = Object.entries({ PATH, HOME, GOPATH, GOMODCACHE, GOCACHE, GOFLAGS, GOPROXY }).filter(([, value]) => value !== undefined);
  return { ...Object.fromEntries(passed), LOOM_ADDRESS: loom.address, LOOM_TOKEN: TOKEN, ...extra };
}

describe('the clients against loom serve', () => {
  it('Python: pytest passes the round trip, the refused call and the refused file', async () => {
    const run = await runToEnd(python, ['-m', 'pytest', '-rA', '-p', 'no:cacheprovider', 'tests'], pythonClient, clientEnv({ PYTHONDONTWRITEBYTECODE: '1' }));
    expect(run.code, run.output).toBe(0);
    expect(run.output).toMatch(/PASSED tests\/test_round_trip\.py::test_round_trip\b/);
    expect(run.output).toMatch(/PASSED tests\/test_round_trip\.py::test_refuses_a_call_without_the_token\b/);
    expect(run.output).toMatch(/PASSED tests\/test_round_trip\.py::test_refuses_a_wrong_kind_naming_it\b/);
    expect(run.output).not.toMatch(/SKIPPED|FAILED|ERROR/);
  });

  it('Go: go test passes the round trip, the refused call and the refused file', async () => {
    const run = await runToEnd(go, ['test', '-count=1', '-v', './...'], goClient, clientEnv());
    expect(run.code, run.output).toBe(0);
    expect(run.output).toMatch(/--- PASS: TestRoundTrip\b/);
    expect(run.output).toMatch(/--- PASS: TestRefusesACallWithoutTheToken\b/);
    expect(run.output).toMatch(/--- PASS: TestRefusesAWrongKindNamingIt\b/);
    expect(run.output).not.toMatch(/--- (SKIP|FAIL)/);
  });
});
