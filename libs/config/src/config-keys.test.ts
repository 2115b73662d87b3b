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
  it('documents every key once, each one loom knows; map and per-service keys with a placeholder', () => {
    const keys = configKeys.map((row) => row.key);
    expect(new Set(keys).size).toBe(keys.length);
    for (const key of keys) expect(isKnownKey(key.replace(/<[a-z]+>/, 'config-store')), key).toBe(true);
    expect(keys.filter((key) => key.includes('<'))).toEqual(
      expect.arrayContaining(['loom.services.<name>.address', 'loom.auth.tokens.<identity>', 'loom.secrets.keys.<id>']),
    );
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
