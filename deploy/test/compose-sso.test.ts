import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { ExecutorClient } from '@loom/contracts';
import { FakeIdentityProvider } from '@loom/identity/testing';
import { call, createClient } from '@loom/service-kit';
import { failure } from '@loom/service-kit/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ComposeConfig, containerProcess, loomServicesOf, resolveCompose } from './compose-processes.js';
import { type NatsProcess, startNatsOfCompose } from './nats.js';
import { freePort, type ServiceProcess, startService, stopService } from './processes.js';
import { deployDir, imageSpec, run, scratchDir } from './tools.js';

/**
 * deploy/compose/docker-compose.sso.yml on top of the main file: resolved by `docker-compose
 * config`, then its executor run as a process (as compose-topology.test.ts runs the stack) against
 * a loopback identity provider, to show the settings sign operators in and run graph queries as
 * the token's user.
 */
const composeDir = join(deployDir, 'compose');
const FILES = ['docker-compose.yml', 'docker-compose.sso.yml'];

describe('docker-compose.sso.yml', () => {
  const base = scratchDir('sso');
  let provider: FakeIdentityProvider;
  let secretsDir: string;
  let compose: ComposeConfig;

  /** The installation configuration of one client of the provider's realm, as the provider exports it. */
  const installation = (resource: string): string =>
    JSON.stringify({
      realm: provider.realm,
      'auth-server-url': provider.url,
      'ssl-required': 'none',
      resource,
      'verify-token-audience': true,
      'use-resource-role-mappings': true,
    });

  beforeAll(async () => {
    provider = await FakeIdentityProvider.start();
    secretsDir = join(base, 'secrets');
    const generated = run('sh', [join(composeDir, 'generate-secrets.sh'), secretsDir]);
    expect(generated.status, generated.stderr).toBe(0);
    expect(generated.stdout).toContain('neo4j-sso-password');
    writeFileSync(join(secretsDir, 'loom-oidc-client.json'), installation('loom'));
    writeFileSync(join(secretsDir, 'neo4j-oidc-client.json'), installation('neo4j'));
    compose = resolveCompose(composeDir, FILES, { LOOM_SECRETS_DIR: secretsDir, NEO4J_ACCEPT_LICENSE_AGREEMENT: 'yes' });
  });
  afterAll(async () => {
    await provider?.close();
  });

  it('signs operators in on all six services; only the executor holds the graph settings and the password of loom_sso', () => {
    const loomServices = loomServicesOf(compose);
    expect(loomServices.sort()).toEqual(['audit', 'config-store', 'executor', 'scheduler', 'secrets', 'skill-gateway']);
    for (const name of loomServices) {
      const service = compose.services[name];
      expect(service?.environment?.LOOM_AUTH_OIDC_CONFIGFILE).toBe('/run/secrets/loom_oidc_client');
      expect(service?.secrets?.map((secret) => secret.source)).toContain('loom_oidc_client');
      // static tokens keep working beside sign-in
      expect(service?.environment?.LOOM_AUTH_TOKENS_OPERATOR_FILE).toBe('/run/secrets/loom_token_operator');
    }
    const withGraphSettings = Object.keys(compose.services).filter((name) =>
      Object.keys(compose.services[name]?.environment ?? {}).some((key) => key.startsWith('LOOM_GRAPH_SSO_')),
    );
    expect(withGraphSettings).toEqual(['executor']);
    const holders = Object.keys(compose.services).filter((name) => compose.services[name]?.secrets?.some((secret) => secret.source === 'neo4j_sso_password'));
    expect(holders).toEqual(['executor']);
    expect(compose.secrets.loom_oidc_client?.file).toBe(join(secretsDir, 'loom-oidc-client.json'));
  });

  it('gives Neo4j the identity-provider plugin for authentication and authorization, native users kept, and the installation file in conf', () => {
    const neo4j = compose.services.neo4j as { image: string; environment: Record<string, string>; volumes: string[] };
    expect(neo4j.image).toMatch(/^neo4j:[\d.]+-enterprise$/);
    expect(neo4j.environment.NEO4J_dbms_security_authentication__providers).toBe('plugin-keycloak-sso,native');
    expect(neo4j.environment.NEO4J_dbms_security_authorization__providers).toBe('plugin-keycloak-sso,native');
    expect(neo4j.volumes).toContain(`${join(secretsDir, 'neo4j-oidc-client.json')}:/var/lib/neo4j/conf/keycloak.json:ro`);
    expect(neo4j.volumes).toContain(`${join(composeDir, 'neo4j-plugins')}:/plugins:ro`);
    // the NLP graph is not for interactive use and keeps native users only
    expect(JSON.stringify(compose.services['neo4j-nlp'])).not.toContain('plugin-keycloak-sso');
  });

  it('stops without NEO4J_ACCEPT_LICENSE_AGREEMENT, naming it', () => {
    const result = run('docker-compose', [...FILES.flatMap((file) => ['-f', file]), 'config', '-q'], {
      cwd: composeDir,
      env: { PATH: process.env.PATH, LOOM_SECRETS_DIR: secretsDir },
    });
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain('set NEO4J_ACCEPT_LICENSE_AGREEMENT=yes');
  });

  describe('its executor, run as a process', () => {
    let executor: ServiceProcess | undefined;
    let client: ExecutorClient;
    const clients: ExecutorClient[] = [];
    let bearerClient: (token: string) => ExecutorClient;
    let nats: NatsProcess | undefined;

    beforeAll(async () => {
      // nothing listens on the other containers' ports: the executor starts without them, and a
      // query that passes validation reaches for the closed Neo4j port; NATS, which its messages
      // go through, runs as the compose file configures it
      nats = await startNatsOfCompose(compose, join(base, 'nats'));
      const natsAddress = nats.address;
      const closed = new Map<string, number>();
      for (const host of ['config-store', 'scheduler', 'secrets', 'skill-gateway', 'audit', 'otel-collector', 'neo4j']) closed.set(host, await freePort());
      const grpcPort = await freePort();
      const mapAddress = (host: string): string | undefined =>
        host === 'executor' ? `127.0.0.1:${grpcPort}` : host === 'nats' ? natsAddress : closed.has(host) ? `127.0.0.1:${closed.get(host)}` : undefined;
      const launch = containerProcess({ compose, name: 'executor', image: imageSpec(), base, mapAddress, grpcPort, metricsPort: await freePort() });
      executor = await startService('executor', process.execPath, launch.args, launch);
      bearerClient = (token: string) => {
        const created = createClient(ExecutorClient, `127.0.0.1:${grpcPort}`, { token, retry: false });
        clients.push(created);
        return created;
      };
      client = bearerClient(await provider.sign({ aud: 'loom', preferred_username: 'vera', ...FakeIdentityProvider.clientRoles('loom', ['loom_viewer']) }));
    });
    afterAll(async () => {
      for (const created of clients) created.close();
      if (executor !== undefined) await stopService(executor);
      await nats?.stop();
    });

    it('takes a signed-in viewer: reading works, starting a workflow is PERMISSION_DENIED', async () => {
      const { definitions } = await call(client, 'listComponentDefinitions', {});
      expect(definitions.length).toBeGreaterThan(0);
      const refused = await failure(call(client, 'stopWorkflow', { name: 'anything' }));
      expect(refused.code).toBe(status.PERMISSION_DENIED);
      const stranger = bearerClient(
        await provider.sign({ aud: 'another-client', preferred_username: 'mallory', ...FakeIdentityProvider.clientRoles('loom', ['loom_admin']) }),
      );
      expect((await failure(call(stranger, 'listComponentDefinitions', {}))).code).toBe(status.UNAUTHENTICATED);
    });

    it("validates the user's token against the database's client and reaches for Neo4j as that user", async () => {
      const neo4jToken = await provider.sign({ aud: 'neo4j', preferred_username: 'vera', ...FakeIdentityProvider.clientRoles('neo4j', ['NEO4J_Reader']) });
      const reached = await failure(call(client, 'queryGraph', { query: 'RETURN 1', parameters: {}, accessToken: neo4jToken, write: false }));
      expect(reached.code).toBe(status.UNAVAILABLE);
      // a token of loom's client is not one for the database
      const loomToken = await provider.sign({ aud: 'loom', preferred_username: 'vera' });
      const refused = await failure(call(client, 'queryGraph', { query: 'RETURN 1', parameters: {}, accessToken: loomToken, write: false }));
      expect(refused.code).toBe(status.UNAUTHENTICATED);
    });
  });
});
