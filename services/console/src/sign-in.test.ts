import { loadConfig } from '@loom/config';
import { describe, expect, it } from 'vitest';
import { ApiError } from './http-errors.js';
import { anonymousOwner, TokenCheck } from './sign-in.js';

describe('who signs in', () => {
  it('without a token only when loom.auth.allowAnonymous is on, with the anonymous roles and no token on its calls', () => {
    const off = loadConfig({ env: {} }).auth;
    expect(() => anonymousOwner(off)).toThrow(ApiError);
    const on = loadConfig({ env: {}, overrides: ['loom.auth.allowAnonymous=true', 'loom.auth.anonymousRoles=viewer'] }).auth;
    expect(anonymousOwner(on)).toEqual({ identity: 'anonymous', roles: ['viewer'], permissions: ['query-graph', 'read', 'read-graph'], token: '' });
  });

  it('with a static token as its identity and configured roles; a wrong token is 401', async () => {
    const auth = loadConfig({ env: {}, overrides: ['loom.auth.tokens.ops=ops-token-0123456789', 'loom.auth.roles.ops=operator'] }).auth;
    const check = new TokenCheck(auth);
    const owner = await check.owner('ops-token-0123456789');
    expect(owner).toMatchObject({ identity: 'ops', roles: ['operator'], token: 'ops-token-0123456789' });
    expect(owner.permissions).toContain('operate');
    expect(owner.tokenExpiresAt).toBeUndefined();
    await expect(check.owner('wrong')).rejects.toMatchObject({ status: 401 });
  });
});
