import { describe, expect, it } from 'vitest';
import { configKeys, envVarFor, isKnownKey, serviceNames } from './config-keys.js';

describe('envVarFor', () => {
  it.each([
    ['server.port', 'SERVER_PORT'],
    ['loom.security.audit.enabled', 'LOOM_SECURITY_AUDIT_ENABLED'],
    ['loom.datasource.filesystemRoot', 'LOOM_DATASOURCE_FILESYSTEMROOT'],
    ['loom.secrets.database.url', 'LOOM_SECRETS_DATABASE_URL'],
    ['loom.services.config-store.address', 'LOOM_SERVICES_CONFIGSTORE_ADDRESS'],
    ['loom.services.skill-gateway.address', 'LOOM_SERVICES_SKILLGATEWAY_ADDRESS'],
  ])('%s -> %s', (key, variable) => {
    expect(envVarFor(key)).toBe(variable);
  });
});

describe('configKeys', () => {
  it('documents every key once, map and per-service keys with a placeholder', () => {
    const keys = configKeys.map((row) => row.key);
    expect(new Set(keys).size).toBe(keys.length);
    expect(keys).toEqual([
      'server.port',
      'server.host',
      'server.shutdown.deadlineMs',
      'loom.data.directory',
      'loom.datasource.filesystemRoot',
      'loom.startup.workflows.directory',
      'loom.security.audit.enabled',
      'loom.security.audit.log.path',
      'loom.security.audit.log.maxBytes',
      'loom.security.serverPolicy.enabled',
      'loom.experimental.enabled',
      'loom.scripts.timeLimitMs',
      'loom.scripts.javascript.memoryLimitMb',
      'loom.scripts.python.memoryLimitMb',
      'loom.executor.queueCapacity',
      'loom.secrets.database.url',
      'loom.secrets.keys.<id>',
      'loom.secrets.activeKeyId',
      'loom.secrets.keyRingFile',
      'loom.secrets.generateKeys',
      'loom.embedded.postgres.dataDir',
      'loom.embedded.postgres.port',
      'loom.embedded.graph.dataDir',
      'loom.embedded.graph.port',
      'loom.services.<name>.address',
      'loom.auth.tokens.<identity>',
      'loom.auth.roles.<identity>',
      'loom.auth.allowAnonymous',
      'loom.auth.anonymousRoles',
      'loom.auth.oidc.configFile',
      'loom.auth.oidc.rolePrefix',
      'loom.graph.sso.providerConfigFile',
      'loom.graph.sso.uri',
      'loom.graph.sso.mode',
      'loom.graph.sso.user',
      'loom.graph.sso.password',
      'loom.graph.sso.database',
      'loom.tls.certFile',
      'loom.tls.keyFile',
      'loom.tls.caFile',
      'loom.telemetry.serviceName',
      'loom.telemetry.otlp.endpoint',
      'loom.telemetry.prometheus.port',
      'loom.telemetry.sampling.ratio',
      'loom.telemetry.messages.sampling.ratio',
      'loom.scheduler.database.url',
      'loom.scheduler.stateFile',
      'loom.scheduler.lease.pollMs',
      'loom.scheduler.lease.timeoutMs',
      'loom.scheduler.restart.initialDelayMs',
      'loom.scheduler.restart.maxDelayMs',
      'loom.scheduler.catchUp.maxFires',
      'loom.scheduler.update.default',
      'loom.scheduler.update.workflows.<name>',
      'loom.log.level',
      'loom.skills.database.url',
      'loom.skills.timeoutMs',
      'loom.skills.timeouts.<name>',
      'loom.skills.maxConcurrency',
      'loom.skills.keywordExtraction.maxConcurrency',
      'loom.skills.concurrency.<name>',
      'loom.skills.retries',
      'loom.skills.backoff.initialMs',
      'loom.skills.backoff.maxMs',
      'loom.skills.breaker.failureThreshold',
      'loom.skills.breaker.openMs',
      'loom.skills.registry.cacheMs',
      'loom.skills.register.<name>',
    ]);
  });

  it('shows defaults and environment variables as an operator writes them', () => {
    const row = (key: string) => configKeys.find((entry) => entry.key === key);
    expect(row('server.port')).toMatchObject({ default: '8100', env: 'SERVER_PORT' });
    expect(row('loom.experimental.enabled')).toMatchObject({ default: 'false', env: 'LOOM_EXPERIMENTAL_ENABLED' });
    expect(row('loom.secrets.generateKeys')).toMatchObject({ default: 'false', env: 'LOOM_SECRETS_GENERATEKEYS' });
    expect(row('loom.secrets.database.url')?.default).toMatch(/embedded/);
    expect(row('loom.auth.tokens.<identity>')?.env).toBe('LOOM_AUTH_TOKENS_<IDENTITY>');
    for (const entry of configKeys) expect(entry.description).not.toBe('');
  });
});

describe('isKnownKey', () => {
  it('knows fixed keys, service addresses and map entries, and nothing else', () => {
    expect(isKnownKey('server.port')).toBe(true);
    for (const service of serviceNames) expect(isKnownKey(`loom.services.${service}.address`)).toBe(true);
    expect(isKnownKey('loom.auth.tokens.alice')).toBe(true);
    expect(isKnownKey('loom.secrets.keys.k1')).toBe(true);
    expect(isKnownKey('loom.secrets.keys.')).toBe(false);
    expect(isKnownKey('loom.scheduler.update.workflows.Article pipeline')).toBe(true);
    expect(isKnownKey('loom.services.billing.address')).toBe(false);
    expect(isKnownKey('loom.security.audit.enable')).toBe(false);
    expect(isKnownKey('toString')).toBe(false);
  });
});
