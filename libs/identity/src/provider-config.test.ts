import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ValidationError } from '@loom/domain';
import { describe, expect, it } from 'vitest';
import { databaseRoles } from './database-roles.js';
import { endpointsOf, IdentityProviderConfigError, issuerOf, parseIdentityProviderConfig, readIdentityProviderConfig } from './provider-config.js';

const installation = {
  realm: 'graphs',
  'auth-server-url': 'https://id.example.com/',
  'ssl-required': 'external',
  resource: 'neo4j',
  'verify-token-audience': true,
  credentials: { secret: 'client-secret' },
  'use-resource-role-mappings': true,
  'confidential-port': 0,
  'policy-enforcer': {},
};

function fieldOf(document: unknown): string | undefined {
  try {
    parseIdentityProviderConfig(JSON.stringify(document));
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return (error as ValidationError).violations[0]?.field;
  }
  return undefined;
}

describe('parseIdentityProviderConfig', () => {
  it('reads the installation configuration and derives the realm endpoints', () => {
    const config = parseIdentityProviderConfig(JSON.stringify(installation));
    expect(config).toMatchObject({ realm: 'graphs', resource: 'neo4j', verifyTokenAudience: true, clientSecret: 'client-secret' });
    expect(issuerOf(config)).toBe('https://id.example.com/realms/graphs');
    expect(endpointsOf(config).jwks.href).toBe('https://id.example.com/realms/graphs/protocol/openid-connect/certs');
  });

  it('applies the provider defaults for optional fields', () => {
    const config = parseIdentityProviderConfig(JSON.stringify({ realm: 'r', 'auth-server-url': 'http://localhost:8080', resource: 'c' }));
    expect(config).toMatchObject({ sslRequired: 'external', verifyTokenAudience: false, useResourceRoleMappings: false, clientSecret: undefined });
  });

  it('refuses a malformed file naming the field', () => {
    expect(fieldOf({ ...installation, realm: '' })).toBe('realm');
    expect(fieldOf({ ...installation, 'auth-server-url': 'ftp://x' })).toBe('["auth-server-url"]');
    expect(fieldOf({ ...installation, 'ssl-required': 'sometimes' })).toBe('["ssl-required"]');
    expect(fieldOf({ ...installation, 'verify-token-audience': 'yes' })).toBe('["verify-token-audience"]');
    expect(fieldOf({ ...installation, credentials: { secret: 42 } })).toBe('credentials.secret');
    expect(fieldOf({ ...installation, 'confidential-port': 70000 })).toBe('["confidential-port"]');
    expect(fieldOf({ ...installation, 'ssl-required': 'all', 'auth-server-url': 'http://id.example.com' })).toBe('["auth-server-url"]');
    expect(() => parseIdentityProviderConfig('{"realm": ')).toThrow(ValidationError);
  });
});

describe('databaseRoles', () => {
  it('maps prefixed roles case-insensitively and ignores the rest', () => {
    expect(databaseRoles(['NEO4J_Admin', 'neo4j_ADMIN', 'Neo4j_reader', 'loom_editor', 'NEO4J_', 'offline_access'])).toEqual(['admin', 'reader']);
  });
});

describe('readIdentityProviderConfig', () => {
  const dir = mkdtempSync(join(tmpdir(), 'loom-provider-'));

  it('reads the file', () => {
    const file = join(dir, 'keycloak.json');
    writeFileSync(file, JSON.stringify(installation));
    expect(readIdentityProviderConfig(file).resource).toBe('neo4j');
  });

  it('names the file and the reason when it cannot be read', () => {
    const file = join(dir, 'missing.json');
    expect(() => readIdentityProviderConfig(file)).toThrow(new IdentityProviderConfigError(file, 'cannot be read (ENOENT)'));
  });

  it('names the file and the field when the file is malformed', () => {
    const file = join(dir, 'bad.json');
    writeFileSync(file, JSON.stringify({ ...installation, 'confidential-port': 'eighty' }));
    let caught: unknown;
    try {
      readIdentityProviderConfig(file);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(IdentityProviderConfigError);
    expect((caught as Error).message).toContain(`${file}: `);
    expect((caught as Error).message).toContain('confidential-port');
    expect((caught as Error).cause).toBeInstanceOf(ValidationError);
  });
});
