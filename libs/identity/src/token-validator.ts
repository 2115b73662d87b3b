import { UnauthenticatedError, UnavailableError } from '@loom/domain';
import { createRemoteJWKSet, decodeProtectedHeader, errors, type JWTPayload, jwtVerify } from 'jose';
import { endpointsOf, type IdentityProviderConfig, issuerOf } from './provider-config.js';

/** Why a token was refused; logged by the caller, never sent back to the client. */
export type TokenRejection =
  | 'missing'
  | 'malformed'
  | 'unsigned'
  | 'symmetric-algorithm'
  | 'algorithm-not-allowed'
  | 'unknown-key'
  | 'bad-signature'
  | 'expired'
  | 'not-yet-valid'
  | 'wrong-issuer'
  | 'wrong-audience'
  | 'claim-invalid'
  | 'no-subject';

/** A token that does not prove who the caller is. The message is safe for the client; `reason` is for the log. */
export class TokenRejectedError extends UnauthenticatedError {
  constructor(
    readonly reason: TokenRejection,
    options?: { cause?: unknown },
  ) {
    super('invalid access token', options);
  }
}

/** The identity a valid token proves. */
export interface VerifiedIdentity {
  /** `preferred_username`, or the subject when the provider sends none. */
  readonly user: string;
  readonly subject: string;
  /** The client roles of the configured resource, or the realm roles (see `use-resource-role-mappings`). */
  readonly roles: readonly string[];
  readonly expiresAt: Date | undefined;
}

/** Settings of token validation beyond the provider's own configuration. */
export interface TokenValidatorOptions {
  /** Clock skew allowed on `exp` and `nbf`, in seconds. */
  readonly leewaySeconds?: number;
  /** The JWKS is fetched again for an unknown key id at most once per this interval, in ms. */
  readonly jwksRefreshIntervalMs?: number;
  /** A cached JWKS is fetched again after this long even when every key id is known, in ms. */
  readonly jwksMaxAgeMs?: number;
  /** Time-out of one JWKS fetch, in ms. */
  readonly jwksTimeoutMs?: number;
  /** Where the keys are, when not at the realm's standard path (tests, proxies). */
  readonly jwksUrl?: URL;
}

/** Asymmetric signatures only: `none` and HMAC (which a public key could be abused to forge) never pass. */
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];

/** Validates the realm's access tokens: signature against its JWKS, issuer, time, audience, roles. */
export class TokenValidator {
  private readonly keys: ReturnType<typeof createRemoteJWKSet>;
  private readonly issuer: string;

  constructor(
    private readonly config: IdentityProviderConfig,
    private readonly options: TokenValidatorOptions = {},
  ) {
    this.issuer = issuerOf(config);
    this.keys = createRemoteJWKSet(options.jwksUrl ?? endpointsOf(config).jwks, {
      cooldownDuration: options.jwksRefreshIntervalMs ?? 30_000,
      cacheMaxAge: options.jwksMaxAgeMs ?? 600_000,
      timeoutDuration: options.jwksTimeoutMs ?? 5_000,
    });
  }

  /**
   * Returns the identity the token proves; a token that proves none is a TokenRejectedError,
   * a provider that cannot be reached for its keys an UnavailableError.
   */
  async verify(token: string | undefined): Promise<VerifiedIdentity> {
    if (token === undefined || token === '') throw new TokenRejectedError('missing');
    this.refuseAlgorithmOf(token);
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, this.keys, {
        issuer: this.issuer,
        algorithms: ALGORITHMS,
        clockTolerance: this.options.leewaySeconds ?? 30,
        ...(this.config.verifyTokenAudience ? { audience: this.config.resource } : {}),
      }));
    } catch (error) {
      throw rejection(error);
    }
    if (typeof payload.sub !== 'string' || payload.sub === '') throw new TokenRejectedError('no-subject');
    const username = payload.preferred_username;
    return {
      user: typeof username === 'string' && username !== '' ? username : payload.sub,
      subject: payload.sub,
      roles: this.rolesOf(payload),
      expiresAt: payload.exp === undefined ? undefined : new Date(payload.exp * 1000),
    };
  }

  // jose refuses these too, but as one "algorithm not allowed"; an operator reading the log
  // should see an unsigned token and a key-confusion attempt for what they are.
  private refuseAlgorithmOf(token: string): void {
    let alg: unknown;
    try {
      alg = decodeProtectedHeader(token).alg;
    } catch (error) {
      throw new TokenRejectedError('malformed', { cause: error });
    }
    if (typeof alg !== 'string' || alg.toLowerCase() === 'none') throw new TokenRejectedError('unsigned');
    if (/^HS\d+$/i.test(alg)) throw new TokenRejectedError('symmetric-algorithm');
    if (!ALGORITHMS.includes(alg)) throw new TokenRejectedError('algorithm-not-allowed');
  }

  private rolesOf(payload: JWTPayload): string[] {
    const holder = this.config.useResourceRoleMappings
      ? (payload.resource_access as Record<string, { roles?: unknown }> | undefined)?.[this.config.resource]
      : (payload.realm_access as { roles?: unknown } | undefined);
    const roles = holder?.roles;
    return Array.isArray(roles) ? roles.filter((role): role is string => typeof role === 'string') : [];
  }
}

function rejection(error: unknown): Error {
  if (error instanceof errors.JWTExpired) return new TokenRejectedError('expired', { cause: error });
  if (error instanceof errors.JWTClaimValidationFailed) {
    const reason: TokenRejection =
      error.claim === 'nbf' ? 'not-yet-valid' : error.claim === 'iss' ? 'wrong-issuer' : error.claim === 'aud' ? 'wrong-audience' : 'claim-invalid';
    return new TokenRejectedError(reason, { cause: error });
  }
  if (error instanceof errors.JWSSignatureVerificationFailed) return new TokenRejectedError('bad-signature', { cause: error });
  if (error instanceof errors.JWKSNoMatchingKey) return new TokenRejectedError('unknown-key', { cause: error });
  if (error instanceof errors.JOSEAlgNotAllowed) return new TokenRejectedError('algorithm-not-allowed', { cause: error });
  if (error instanceof errors.JWSInvalid || error instanceof errors.JWTInvalid) return new TokenRejectedError('malformed', { cause: error });
  if (error instanceof errors.JWKSTimeout || error instanceof errors.JWKSInvalid || error instanceof TypeError) {
    return new UnavailableError('the identity provider cannot be reached for its signing keys', { cause: error });
  }
  return new TokenRejectedError('malformed', { cause: error });
}
