import neo4j, { Neo4jError } from 'neo4j-driver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GraphPermissionDeniedError, GraphSsoModeUnsupportedError, SsoGraphQueries } from '../src/index.js';
import { RecordingDriver } from '../src/testing.js';
import { startTestNeo4j, type TestNeo4j } from './harness.js';

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

describe('SsoGraphQueries on a real Neo4j (the embedded Community server, or LOOM_TEST_NEO4J_URI)', () => {
  let server: TestNeo4j;
  let edition: string;
  beforeAll(async () => {
    server = await startTestNeo4j();
    const driver = neo4j.driver(server.uri, neo4j.auth.basic(server.user, server.password));
    try {
      const { records } = await driver.executeQuery(
        'CALL dbms.components() YIELD edition RETURN edition',
        {},
        server.database === undefined ? {} : { database: server.database },
      );
      edition = String(records[0]?.get('edition'));
    } finally {
      await driver.close();
    }
  });
  afterAll(async () => {
    await server?.close();
  });
  const database = (): { database?: string } => (server.database === undefined ? {} : { database: server.database });

  it('impersonate: refused on Community Edition as FAILED_PRECONDITION naming the reason; on Enterprise the query runs as the user', async () => {
    const queries = new SsoGraphQueries({ url: server.uri, mode: 'impersonate', user: server.user, password: server.password, ...database() });
    try {
      const running = queries.run('SHOW CURRENT USER YIELD user RETURN user', {}, { user: server.user, token: '' });
      if (edition === 'community') {
        const error = await running.catch((caught: unknown) => caught);
        expect(error).toBeInstanceOf(GraphSsoModeUnsupportedError);
        expect(error).toMatchObject({ kind: 'failed-precondition', mode: 'impersonate', code: 'Neo.ClientError.Statement.ArgumentError' });
        expect((error as Error).message).toContain('Neo4j Community Edition has no impersonation');
        expect((error as Error).message).toContain(server.uri);
      } else {
        // the service account impersonating itself needs no privilege beyond its own
        expect(await running).toEqual([{ user: server.user }]);
      }
    } finally {
      await queries.close();
    }
  });

  it("bearer: the user's token is the session's credential; a server without an identity provider refuses the mode, never echoing the token", async () => {
    const caller = { user: 'alice', token: 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl' };
    const queries = new SsoGraphQueries({ url: server.uri, mode: 'bearer', ...database() });
    try {
      const error = await queries.run('RETURN 1 AS one', {}, caller).catch((caught: unknown) => caught);
      if (edition === 'community') {
        expect(error).toBeInstanceOf(GraphSsoModeUnsupportedError);
        expect(error).toMatchObject({ kind: 'failed-precondition', mode: 'bearer', code: 'Neo.ClientError.Security.Unauthorized' });
        expect((error as Error).message).toMatch(/accepts no bearer tokens.*identity-provider/);
      } else {
        // an Enterprise server either has no identity provider (the same refusal) or refuses this made-up token
        expect([GraphSsoModeUnsupportedError, GraphPermissionDeniedError]).toContain((error as Error).constructor);
      }
      expect((error as Error).message).not.toContain(caller.token);
    } finally {
      await queries.close();
    }
  });
});
