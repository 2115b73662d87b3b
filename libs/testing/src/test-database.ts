/** The environment variable naming the PostgreSQL server the tests may create databases on. */
export const TEST_DATABASE_ENV = 'LOOM_TEST_DATABASE_URL';

/** CI runs without a PostgreSQL server for the tests: the tests against one would be skipped. */
export class TestDatabaseMissingError extends Error {
  constructor(suite: string, how: string) {
    super(`${suite}: ${how}`);
    this.name = 'TestDatabaseMissingError';
  }
}

/**
 * The URL of the PostgreSQL server for the tests against a real server: `npm test` starts one of the tests' own and
 * sets LOOM_TEST_DATABASE_URL. Outside it (one vitest file run by hand) the caller's tests are skipped, and this
 * prints why, naming `suite`; under CI a missing server fails the run instead, so CI never skips them.
 */
export function testDatabaseUrl(suite: string): string | undefined {
  const url = process.env[TEST_DATABASE_ENV] || undefined;
  if (url !== undefined) return url;
  const how = `${TEST_DATABASE_ENV} is not set: \`npm test\` starts a PostgreSQL of the tests' own and sets it; to run one file, export what \`node scripts/test-env/postgres.mjs\` prints`;
  if (process.env['CI']) throw new TestDatabaseMissingError(suite, how);
  console.log(`${suite}: tests against the PostgreSQL server skipped: ${how}`);
  return undefined;
}
