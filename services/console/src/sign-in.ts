import { type LoomConfig } from '@loom/config';
import {
  type BearerCredentials,
  bearerCredentialsOf,
  isCredentialRefusal,
  permissionsOfRoles,
  type Role,
  ROLE_PERMISSIONS,
  ROLES,
  SIGNED_IN_PREFIX,
} from '@loom/service-kit';
import { ApiError } from './http-errors.js';
import { type SessionOwner } from './sessions.js';

/**
 * Checks a token the way loom's gRPC server does (the same BearerCredentials: static tokens and roles, the identity
 * provider's access tokens): who it proves and what they may do, for the session answer that hides the buttons a
 * user may not press. The services check every call again; this check decides nothing they do.
 */
export class TokenCheck {
  private readonly credentials: BearerCredentials;

  constructor(private readonly auth: LoomConfig['auth']) {
    this.credentials = bearerCredentialsOf(auth);
  }

  /** The session owner a token proves; 401 when it proves nobody, 503 when the identity provider cannot be asked. */
  async owner(token: string): Promise<SessionOwner> {
    const checked = await this.credentials.check(`Bearer ${token}`);
    if (isCredentialRefusal(checked)) throw new ApiError(checked.unavailable ? 503 : 401, checked.clientMessage);
    const identity = checked.identity ?? 'anonymous';
    const permissions = [...checked.permissions].sort();
    const roles = identity.startsWith(SIGNED_IN_PREFIX) ? rolesHeld(checked.permissions) : [...(this.auth.roles[identity] ?? [])];
    const expiresAt = accessTokenExpiry(token);
    return { identity, roles, permissions, token, ...(expiresAt === undefined ? {} : { tokenExpiresAt: expiresAt }) };
  }
}

/**
 * A provider's roles are not kept in the principal: the loom roles whose permissions it holds in full, without those
 * another held role includes (an operator is not also shown as a viewer).
 */
function rolesHeld(permissions: ReadonlySet<string>): Role[] {
  const held = ROLES.filter((role) => ROLE_PERMISSIONS[role].every((permission) => permissions.has(permission)));
  const includes = (wider: Role, narrower: Role): boolean =>
    wider !== narrower && ROLE_PERMISSIONS[narrower].every((permission) => ROLE_PERMISSIONS[wider].includes(permission));
  return held.filter((role) => !held.some((other) => includes(other, role)));
}

/** Who signs in without a token when loom.auth.allowAnonymous is on: the API's own anonymous caller and its roles. */
export const ANONYMOUS_IDENTITY = 'anonymous';

/**
 * The session owner of a sign-in without a token: refused (401) unless loom.auth.allowAnonymous is on, when the
 * services take calls without credentials too (the development config); its calls then carry no token.
 */
export function anonymousOwner(auth: LoomConfig['auth']): SessionOwner {
  if (!auth.allowAnonymous) throw new ApiError(401, 'signing in without a token needs loom.auth.allowAnonymous (off here): sign in with a token', 'anonymous');
  const roles = [...auth.anonymousRoles];
  return { identity: ANONYMOUS_IDENTITY, roles, permissions: [...permissionsOfRoles(roles)].sort(), token: '' };
}

/** The `exp` of a signed access token, in ms (its signature was checked by the caller); undefined for an operator token. */
function accessTokenExpiry(token: string): number | undefined {
  const [, payload] = token.split('.');
  if (payload === undefined || token.split('.').length !== 3) return undefined;
  try {
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { exp?: unknown };
    return typeof claims.exp === 'number' ? claims.exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}
