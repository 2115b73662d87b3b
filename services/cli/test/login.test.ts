import { mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FakeIdentityProvider } from '@loom/identity/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type InProcessLoom, runCli, startLoom } from './loom-in-process.js';

const example = fileURLToPath(new URL('../../../examples/article-pipeline.workflow.yaml', import.meta.url));

let provider: FakeIdentityProvider;
let loom: InProcessLoom;
let providerFile: string;
let credentials: string;

beforeAll(async () => {
  provider = await FakeIdentityProvider.start();
  const directory = mkdtempSync(join(tmpdir(), 'loom-login-'));
  providerFile = join(directory, 'loom-client.json');
  credentials = join(directory, 'config', 'credentials.json');
  writeFileSync(
    providerFile,
    JSON.stringify({
      realm: provider.realm,
      'auth-server-url': provider.url,
      'ssl-required': 'none',
      resource: 'loom',
      'verify-token-audience': true,
      credentials: { secret: 'test-client-secret' },
      'use-resource-role-mappings': true,
    }),
  );
  // the provider's tokens are the only way in: no anonymous calls, no static tokens for people
  loom = await startLoom([
    '--services',
    'audit,config-store,secrets,executor',
    '--set',
    `loom.auth.oidc.configFile=${providerFile}`,
    '--set',
    `loom.graph.sso.providerConfigFile=${providerFile}`,
    '--set',
    'loom.graph.sso.uri=neo4j://127.0.0.1:9',
    '--set',
    'loom.graph.sso.mode=bearer',
  ]);
});
afterAll(async () => {
  await loom.stop();
  await provider.close();
});

const env = (): NodeJS.ProcessEnv => ({ LOOM_CREDENTIALS_FILE: credentials });

describe('loom login', () => {
  it('signs in with the device code flow, keeps the token for this user only, and presents it with its roles', async () => {
    provider.pendingPolls = 1;
    const login = await runCli(['login', '--provider', providerFile], { env: env() });
    expect(login.stderr).toContain('enter the code ABCD-EFGH');
    expect(login.status).toBe(0);
    expect(statSync(credentials).mode & 0o777).toBe(0o600);

    // the device user is a viewer (loom_viewer): reading works, pushing is refused
    const listed = await runCli(['--address', loom.address, 'workflow', 'list'], { env: env() });
    expect(listed.stderr).toBe('');
    expect(listed.status).toBe(0);
    const pushed = await runCli(['--address', loom.address, 'workflow', 'push', example], { env: env() });
    expect(pushed.status).not.toBe(0);
    expect(pushed.stderr).toContain('PERMISSION_DENIED');
  });

  it('signs in as the service account with client credentials, an admin', async () => {
    const login = await runCli(['login', '--provider', providerFile, '--client-credentials'], { env: env() });
    expect(login.status).toBe(0);
    const pushed = await runCli(['--address', loom.address, 'workflow', 'push', example], { env: env() });
    expect(pushed.stderr).toBe('');
    expect(pushed.status).toBe(0);
  });

  it('takes the signed-in token to loom graph query --sso, which reaches for the database as the user', async () => {
    const query = await runCli(['--address', loom.address, 'graph', 'query', '--sso', 'RETURN 1 AS one'], { env: env() });
    // the token passed; no Neo4j server listens here, so the database is unavailable
    expect(query.stderr).toContain('UNAVAILABLE');
    const logout = await runCli(['logout'], { env: env() });
    expect(logout.status).toBe(0);
    const signedOut = await runCli(['--address', loom.address, 'graph', 'query', '--sso', 'RETURN 1 AS one'], { env: env() });
    expect(signedOut.stderr).toContain('run loom login');
  });

  it('refuses a call without the provider token', async () => {
    const anonymous = await runCli(['--address', loom.address, 'workflow', 'list']);
    expect(anonymous.stderr).toContain('UNAUTHENTICATED');
  });
});
