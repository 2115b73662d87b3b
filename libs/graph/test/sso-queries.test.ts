import { Neo4jError } from 'neo4j-driver';
import { describe, expect, it } from 'vitest';
import { GraphPermissionDeniedError, SsoGraphQueries } from '../src/index.js';
import { RecordingDriver } from '../src/testing.js';

// test/neo4j.contract.test.ts runs impersonation against a real server when LOOM_TEST_NEO4J_URI is set

const caller = { user: 'alice', token: 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.signature' };

describe('SsoGraphQueries at the driver boundary', () => {
  it("impersonates the token's user from the service account's driver, in READ mode unless asked to write", async () => {
    const driver = new RecordingDriver();
    const queries = new SsoGraphQueries(
      { url: 'neo4j://graph:7687', mode: 'impersonate', user: 'loom-sso', password: 'service-password', database: 'knowledge' },
      { driverFactory: driver.factory },
    );
    await queries.run('MATCH (n) RETURN count(n) AS n', {}, caller);
    await queries.run('CREATE (:Note)', {}, caller, { write: true });
    await queries.close();
    expect(driver.created[0]?.auth).toMatchObject({ scheme: 'basic', principal: 'loom-sso' });
    expect(driver.sent.map(({ impersonatedUser, accessMode, database, sessionAuth }) => ({ impersonatedUser, accessMode, database, sessionAuth }))).toEqual([
      { impersonatedUser: 'alice', accessMode: 'READ', database: 'knowledge', sessionAuth: undefined },
      { impersonatedUser: 'alice', accessMode: 'WRITE', database: 'knowledge', sessionAuth: undefined },
    ]);
  });

  it("sends the user's own token as the session's bearer credential in bearer mode, never the service account", async () => {
    const driver = new RecordingDriver();
    const queries = new SsoGraphQueries({ url: 'neo4j://graph:7687', mode: 'bearer' }, { driverFactory: driver.factory });
    await queries.run('RETURN 1 AS one', {}, caller);
    expect(driver.created[0]?.auth.scheme).toBe('bearer');
    expect(driver.sent[0]).toMatchObject({ sessionAuth: { scheme: 'bearer' } });
    expect(driver.sent[0]?.impersonatedUser).toBeUndefined();
  });

  it("surfaces the database's refusal of the user's role as a permission error, without the token", async () => {
    const driver = new RecordingDriver();
    const queries = new SsoGraphQueries({ url: 'neo4j://graph:7687', mode: 'bearer' }, { driverFactory: driver.factory });
    driver.answerWith(
      () =>
        new Neo4jError(
          `Write operations are not allowed for user 'alice' with roles [reader] (${caller.token})`,
          'Neo.ClientError.Security.Forbidden',
          '42NFF',
          'permission denied',
        ),
    );
    const error = await queries.run('CREATE (:Note)', {}, caller, { write: true }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(GraphPermissionDeniedError);
    expect((error as Error).message).toContain("not allowed for user 'alice'");
    expect((error as Error).message).not.toContain(caller.token);
  });
});
