import { UnavailableError } from '@loom/domain';
import { base64url, generateKeyPair, SignJWT } from 'jose';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TokenRejectedError, type TokenRejection, TokenValidator } from '../src/index.js';
import { FakeIdentityProvider } from '../src/testing.js';

let provider: FakeIdentityProvider;

beforeEach(async () => {
  provider = await FakeIdentityProvider.start();
});
afterEach(async () => {
  await provider.close();
});

async function rejectionOf(validator: TokenValidator, token: string | undefined): Promise<TokenRejection> {
  const error: unknown = await validator.verify(token).then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(TokenRejectedError);
  // the message a client would see says nothing of the reason
  expect((error as TokenRejectedError).message).toBe('invalid access token');
  return (error as TokenRejectedError).reason;
}

const now = (): number => Math.floor(Date.now() / 1000);

describe('TokenValidator', () => {
  it('gives the user and the client roles of a valid token', async () => {
    const validator = new TokenValidator(provider.config());
    const token = await provider.sign({ preferred_username: 'alice', ...FakeIdentityProvider.clientRoles('loom', ['NEO4J_Admin', 'loom_editor']) });
    const identity = await validator.verify(token);
    expect(identity).toMatchObject({ user: 'alice', subject: 'user-1', roles: ['NEO4J_Admin', 'loom_editor'] });
    expect(identity.expiresAt?.getTime()).toBeGreaterThan(Date.now());
  });

  it('reads realm roles when use-resource-role-mappings is false', async () => {
    const validator = new TokenValidator(provider.config({ useResourceRoleMappings: false }));
    const token = await provider.sign({ realm_access: { roles: ['neo4j_reader'] }, ...FakeIdentityProvider.clientRoles('loom', ['ignored']) });
    expect((await validator.verify(token)).roles).toEqual(['neo4j_reader']);
  });

  it('gives a distinct reason for each way a token is wrong', async () => {
    const validator = new TokenValidator(provider.config(), { leewaySeconds: 5 });
    const reasons: Record<string, TokenRejection> = {};
    reasons.missing = await rejectionOf(validator, undefined);
    reasons.malformed = await rejectionOf(validator, 'not.a-token');
    reasons.expired = await rejectionOf(validator, await provider.sign({ iat: now() - 7200, exp: now() - 60 }));
    reasons.notYetValid = await rejectionOf(validator, await provider.sign({ nbf: now() + 600 }));
    reasons.wrongIssuer = await rejectionOf(validator, await provider.sign({ iss: `${provider.url}/realms/other` }));
    reasons.wrongAudience = await rejectionOf(validator, await provider.sign({ aud: 'another-client' }));
    const { privateKey: strangerKey } = await generateKeyPair('RS256');
    reasons.badSignature = await rejectionOf(validator, await provider.sign({}, { key: strangerKey }));
    reasons.unknownKey = await rejectionOf(validator, await provider.sign({}, { kid: 'no-such-key' }));
    const header = base64url.encode(JSON.stringify({ alg: 'none', typ: 'JWT' }));
    const claims = base64url.encode(JSON.stringify({ iss: provider.issuer, sub: 'user-1', aud: 'loom', exp: now() + 600 }));
    reasons.unsigned = await rejectionOf(validator, `${header}.${claims}.`);
    // key confusion: an HMAC token whose secret is the provider's public key
    const publicKeyBytes = new TextEncoder().encode(JSON.stringify(provider.publicJwk));
    const hmac = await new SignJWT({ iss: provider.issuer, sub: 'user-1', aud: 'loom' })
      .setProtectedHeader({ alg: 'HS256' })
      .setExpirationTime('10m')
      .sign(publicKeyBytes);
    reasons.hmac = await rejectionOf(validator, hmac);
    expect(reasons).toEqual({
      missing: 'missing',
      malformed: 'malformed',
      expired: 'expired',
      notYetValid: 'not-yet-valid',
      wrongIssuer: 'wrong-issuer',
      wrongAudience: 'wrong-audience',
      badSignature: 'bad-signature',
      unknownKey: 'unknown-key',
      unsigned: 'unsigned',
      hmac: 'symmetric-algorithm',
    });
  });

  it('accepts another audience when verify-token-audience is false', async () => {
    const validator = new TokenValidator(provider.config({ verifyTokenAudience: false }));
    expect((await validator.verify(await provider.sign({ aud: 'account' }))).user).toBe('user-1');
  });

  it('allows the configured leeway on expiry', async () => {
    const validator = new TokenValidator(provider.config(), { leewaySeconds: 120 });
    expect((await validator.verify(await provider.sign({ exp: now() - 30 }))).user).toBe('user-1');
  });

  it('follows a key rotation at the provider, fetching the keys again at most once per interval', async () => {
    const validator = new TokenValidator(provider.config(), { jwksRefreshIntervalMs: 0 });
    await validator.verify(await provider.sign());
    expect(provider.jwksFetches).toBe(1);
    await validator.verify(await provider.sign());
    expect(provider.jwksFetches).toBe(1);
    await provider.rotateKey(true);
    expect((await validator.verify(await provider.sign())).user).toBe('user-1');
    expect(provider.jwksFetches).toBe(2);
  });

  it('does not fetch the keys again for unknown key ids within the interval', async () => {
    const validator = new TokenValidator(provider.config(), { jwksRefreshIntervalMs: 60_000 });
    await validator.verify(await provider.sign());
    for (let attempt = 0; attempt < 5; attempt += 1) {
      expect(await rejectionOf(validator, await provider.sign({}, { kid: `forged-${attempt}` }))).toBe('unknown-key');
    }
    expect(provider.jwksFetches).toBe(1);
  });

  it('reports an unreachable provider as unavailable, not as a bad token', async () => {
    const config = provider.config();
    const token = await provider.sign();
    await provider.close();
    const validator = new TokenValidator(config, { jwksTimeoutMs: 2_000 });
    await expect(validator.verify(token)).rejects.toBeInstanceOf(UnavailableError);
    provider = await FakeIdentityProvider.start();
  });
});
