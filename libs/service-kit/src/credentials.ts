import { createHash } from 'node:crypto';
import { ConfigError, type LoomConfig, type LoomRole, loomRoles, serviceNames } from '@loom/config';
import { IdentityProviderConfigError, readIdentityProviderConfig, TokenValidator } from '@loom/identity';
import { type Permission, permissionsOfRoles, SERVICE_PERMISSIONS } from './permissions.js';

// The one check of a bearer token (static or from the identity provider), shared by the gRPC
// Authenticator (auth.ts) and every HTTP endpoint that takes loom's credentials (the webhook).

/** Verifies an identity provider's access token (libs/identity's TokenValidator fits). */
export interface AccessTokenVerifier {
  /** Resolves to the user and their provider roles; rejects when the token proves nobody. */
  verify(token: string): Promise<{ readonly user: string; readonly roles: readonly string[] }>;
}

/** Which bearer tokens prove an identity, and that identity's roles. */
export interface BearerCredentialOptions {
  /** Identity → bearer token. Tokens are compared by their SHA-256, never logged. */
  readonly tokens: Readonly<Record<string, string>>;
  /** Identity of a static token → its roles. A service identity has its own narrow rights besides. */
  readonly roles?: Readonly<Record<string, readonly LoomRole[]>>;
  /** Sign-in with the identity provider: bearer tokens that are not static tokens are verified here. */
  readonly signIn?: { readonly verifier: AccessTokenVerifier; readonly rolePrefix: string };
}

/** Who a caller proved to be, and what that allows. */
export interface Principal {
  /** Undefined for a caller without credentials. */
  readonly identity: string | undefined;
  readonly permissions: ReadonlySet<Permission>;
}

/** Credentials that prove nobody: `unavailable` when the identity provider could not be asked. */
export interface CredentialRefusal {
  readonly refused: true;
  readonly unavailable: boolean;
  /** Why, for operators (never with the token in it). */
  readonly reason: string;
  /** What the caller is told. */
  readonly clientMessage: string;
}

const BEARER = /^Bearer\s+(\S+)$/i;
/** Three base64url parts: what a signed access token (JWS compact form) looks like. */
const JWT_SHAPE = /^[\w-]+\.[\w-]+\.[\w-]*$/;
/** Identities proven by the identity provider are kept apart from configured identities (a user named `executor`). */
export const SIGNED_IN_PREFIX = 'user:';

/** Checks `Authorization` header values against static tokens and the identity provider. */
export class BearerCredentials {
  private readonly identityByTokenHash = new Map<string, string>();

  constructor(private readonly options: BearerCredentialOptions) {
    for (const [identity, token] of Object.entries(options.tokens)) this.identityByTokenHash.set(hashToken(token), identity);
  }

  /**
   * The principal an `Authorization` header value proves, or why it proves nobody. Synchronous for
   * static tokens; a provider's token needs its signature checked first.
   */
  check(header: string): Principal | CredentialRefusal | Promise<Principal | CredentialRefusal> {
    const token = BEARER.exec(header)?.[1];
    const identity = token === undefined ? undefined : this.identityByTokenHash.get(hashToken(token));
    if (identity !== undefined) return this.configured(identity);
    if (token !== undefined && this.options.signIn !== undefined && JWT_SHAPE.test(token)) return this.signedIn(token, this.options.signIn);
    return { refused: true, unavailable: false, reason: 'invalid bearer token', clientMessage: 'invalid bearer token' };
  }

  /** The principal of a configured identity (a static token's, or a verified client certificate's common name). */
  configured(identity: string): Principal {
    const service = (serviceNames as readonly string[]).includes(identity) ? SERVICE_PERMISSIONS[identity as keyof typeof SERVICE_PERMISSIONS] : [];
    const permissions = permissionsOfRoles(this.options.roles?.[identity] ?? []);
    for (const permission of service) permissions.add(permission);
    return { identity, permissions };
  }

  private async signedIn(token: string, signIn: NonNullable<BearerCredentialOptions['signIn']>): Promise<Principal | CredentialRefusal> {
    try {
      const verified = await signIn.verifier.verify(token);
      const prefix = signIn.rolePrefix.toLowerCase();
      const roles = verified.roles
        .filter((role) => role.toLowerCase().startsWith(prefix))
        .map((role) => role.slice(prefix.length).toLowerCase())
        .filter((role): role is LoomRole => (loomRoles as readonly string[]).includes(role));
      return { identity: `${SIGNED_IN_PREFIX}${verified.user}`, permissions: permissionsOfRoles(roles) };
    } catch (error) {
      const reason = (error as { reason?: unknown }).reason;
      const unavailable = (error as { kind?: unknown }).kind === 'unavailable';
      return {
        refused: true,
        unavailable,
        reason:
          typeof reason === 'string' ? `access token refused: ${reason}` : `access token refused: ${error instanceof Error ? error.message : String(error)}`,
        clientMessage: unavailable ? 'the identity provider cannot be reached' : 'invalid access token',
      };
    }
  }
}

/** Whether a check's outcome is a refusal rather than a principal. */
export function isCredentialRefusal(outcome: Principal | CredentialRefusal): outcome is CredentialRefusal {
  return 'refused' in outcome;
}

/**
 * The bearer credentials of `loom.auth`: its static tokens and roles, and sign-in with the identity
 * provider when `loom.auth.oidc.configFile` is set.
 */
export function bearerCredentialsOf(auth: LoomConfig['auth']): BearerCredentials {
  return new BearerCredentials({ tokens: auth.tokens, roles: auth.roles, ...signInOf(auth) });
}

/** Sign-in with the identity provider of `loom.auth.oidc` (none when its configFile is unset); a bad file is a ConfigError naming the key. */
export function signInOf(auth: LoomConfig['auth']): Pick<BearerCredentialOptions, 'signIn'> {
  const { configFile, rolePrefix } = auth.oidc;
  if (configFile === undefined) return {};
  try {
    return { signIn: { verifier: new TokenValidator(readIdentityProviderConfig(configFile)), rolePrefix } };
  } catch (error) {
    if (!(error instanceof IdentityProviderConfigError)) throw error;
    throw new ConfigError(error.message, { key: 'loom.auth.oidc.configFile', cause: error });
  }
}

function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}
