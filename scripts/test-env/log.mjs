// What the test environment's set-up prints, and the one error it throws.

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
