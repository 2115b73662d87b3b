import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { ExecutorClient } from '@loom/contracts';
import { type GraphSsoConfig } from '@loom/config';
import { RecordingDriver } from '@loom/graph/testing';
import { FakeIdentityProvider } from '@loom/identity/testing';
import { call, createClient } from '@loom/service-kit';
import { capturedLogger, failure, serveForTest } from '@loom/service-kit/testing';
import { Neo4jError } from 'neo4j-driver';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { executorModule } from '../src/index.js';
import { GraphSsoQuery } from '../src/graph-sso-query.js';

let provider: FakeIdentityProvider;
let providerFile: string;
const cleanups: (() => Promise<void> | void)[] = [];

beforeEach(async () => {
  provider = await FakeIdentityProvider.start();
  const config = provider.config({ resource: 'neo4j' });
  providerFile = join(mkdtempSync(join(tmpdir(), 'loom-sso-')), 'keycloak.json');
  writeFileSync(
    providerFile,
    JSON.stringify({
      realm: config.realm,
      'auth-server-url': config.authServerUrl,
      'ssl-required': 'none',
      resource: 'neo4j',
      'verify-token-audience': true,
      'use-resource-role-mappings': true,
    }),
  );
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await provider.close();
});

function ssoConfig(overrides: Partial<GraphSsoConfig> = {}): GraphSsoConfig {
  return {
    providerConfigFile: providerFile,
    uri: 'neo4j://graph.internal:7687',
    mode: 'impersonate',
    user: 'loom-sso',
    password: 'service-password',
    ...overrides,
  };
}

describe('GraphSsoQuery', () => {
  it("runs the query as the token's user, impersonated by the service account, with the mapped database roles", async () => {
    const driver = new RecordingDriver();
    const query = new GraphSsoQuery(ssoConfig(), { logger: capturedLogger().logger, driverFactory: driver.factory });
    cleanups.push(() => query.close());
    const token = await provider.sign({ aud: 'neo4j', preferred_username: 'alice', ...FakeIdentityProvider.clientRoles('neo4j', ['NEO4J_Reader', 'other']) });
    const answer = await query.handle({ query: 'MATCH (n) RETURN count(n) AS n', parameters: {}, accessToken: token, write: false });
    expect(answer).toMatchObject({ user: 'alice', databaseRoles: ['reader'] });
    expect(driver.created[0]?.auth).toMatchObject({ scheme: 'basic', principal: 'loom-sso' });
    expect(driver.sent).toMatchObject([{ impersonatedUser: 'alice', accessMode: 'READ', query: 'MATCH (n) RETURN count(n) AS n' }]);
  });

  it('refuses an invalid token before anything reaches the database, the reason in the log only', async () => {
    const driver = new RecordingDriver();
    const { logger, lines } = capturedLogger();
    const query = new GraphSsoQuery(ssoConfig(), { logger, driverFactory: driver.factory });
    cleanups.push(() => query.close());
    const expired = await provider.sign({ aud: 'neo4j', exp: Math.floor(Date.now() / 1000) - 3600 });
    await expect(query.handle({ query: 'RETURN 1', parameters: {}, accessToken: expired, write: false })).rejects.toMatchObject({
      kind: 'unauthenticated',
      message: 'invalid access token',
    });
    expect(driver.sent).toEqual([]);
    expect(lines.join('\n')).toContain('"reason":"expired"');
  });

  it("surfaces the database's refusal of the user's role as permission denied", async () => {
    const driver = new RecordingDriver();
    driver.answerWith(() => new Neo4jError("Write operations are not allowed for user 'alice'", 'Neo.ClientError.Security.Forbidden', '42NFF', 'denied'));
    const query = new GraphSsoQuery(ssoConfig(), { logger: capturedLogger().logger, driverFactory: driver.factory });
    cleanups.push(() => query.close());
    const token = await provider.sign({ aud: 'neo4j', preferred_username: 'alice' });
    await expect(query.handle({ query: 'CREATE (:N)', parameters: {}, accessToken: token, write: true })).rejects.toMatchObject({ kind: 'permission-denied' });
  });
});

describe('QueryGraph through loom', () => {
  it('answers UNAUTHENTICATED for a bad token and FAILED_PRECONDITION when single sign-on is not configured', async () => {
    const root = mkdtempSync(join(tmpdir(), 'loom-sso-serve-'));
    const base = [`loom.data.directory=${root}`, 'loom.auth.allowAnonymous=true'];
    const configured = await serveForTest(
      [executorModule],
      [
        ...base,
        `loom.graph.sso.providerConfigFile=${providerFile}`,
        'loom.graph.sso.uri=neo4j://127.0.0.1:9',
        'loom.graph.sso.user=loom-sso',
        'loom.graph.sso.password=service-password',
      ],
    );
    cleanups.push(() => configured.stop());
    const client = createClient(ExecutorClient, `127.0.0.1:${configured.port}`, { retry: false });
    cleanups.push(() => client.close());
    const forged = await failure(call(client, 'queryGraph', { query: 'RETURN 1', parameters: {}, accessToken: 'a.b.c', write: false }));
    expect(forged.code).toBe(status.UNAUTHENTICATED);
    expect(forged.details).toBe('invalid access token');

    const bare = await serveForTest([executorModule], [...base.map((entry) => entry.replace(root, `${root}-bare`))]);
    cleanups.push(() => bare.stop());
    const bareClient = createClient(ExecutorClient, `127.0.0.1:${bare.port}`, { retry: false });
    cleanups.push(() => bareClient.close());
    const unconfigured = await failure(call(bareClient, 'queryGraph', { query: 'RETURN 1', parameters: {}, accessToken: 'a.b.c', write: false }));
    expect(unconfigured.code).toBe(status.FAILED_PRECONDITION);
  });
});
