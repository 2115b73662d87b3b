// What the test environment's set-up prints, and the one error it throws.
import { pathToFileURL } from 'node:url';

/** A prerequisite of the tests could not be installed or started; the message says what to do. */
export class TestEnvError extends Error {
  constructor(message, options) {
    super(message, options);
    this.name = 'TestEnvError';
  }
}

/** One line on stderr, prefixed so it stands apart from the test runner's output. */
export function log(message) {
  process.stderr.write(`[test-env] ${message}\n`);
}

/**
 * When the module at `moduleUrl` is the script node was started with (`node scripts/test-env/x.mjs`): runs `ensure`
 * and prints the environment it returns as NAME=value lines, for `export $(node scripts/test-env/x.mjs)`.
 */
export async function printEnvWhenRun(moduleUrl, ensure, what) {
  if (process.argv[1] === undefined || moduleUrl !== pathToFileURL(process.argv[1]).href) return;
  try {
    for (const [name, value] of Object.entries(await ensure())) process.stdout.write(`${name}=${value}\n`);
  } catch (error) {
    if (!(error instanceof TestEnvError)) throw error;
    log(`cannot ${what}: ${error.message}`);
    process.exit(1);
  }
}
