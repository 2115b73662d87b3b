import { createHash, randomBytes } from 'node:crypto';
import { type IdentityProviderConfig, endpointsOf } from '@loom/identity';
import { ApiError } from './http-errors.js';

// Sign-in through the identity provider loom already trusts (loom.auth.oidc.configFile): the authorization code flow
// with PKCE (RFC 7636, S256) for a browser. The verifier stays on the server; the state ties the callback to the
// browser that started it (a cookie) and to this server (the pending table), and is used once.

/** A sign-in started and not yet finished. */
interface PendingLogin {
  readonly verifier: string;
  readonly startedAt: number;
}

/** How long a user has to sign in at the provider. */
export const LOGIN_TIMEOUT_MS = 10 * 60_000;
/** Sign-ins pending at most (the oldest is dropped past it). */
const MAX_PENDING = 1000;

/** The authorization code flow against one provider, for one console address. */
export class OidcLogin {
  private readonly pending = new Map<string, PendingLogin>();

  constructor(
    private readonly provider: IdentityProviderConfig,
    /** Where the provider sends the browser back: the console's `/auth/callback`. */
    private readonly redirectUri: () => string,
    private readonly now: () => number = Date.now,
  ) {}

  /** Starts a sign-in: the provider's address to send the browser to, and the state to keep in its cookie. */
  start(): { location: string; state: string } {
    const state = randomBytes(24).toString('base64url');
    const verifier = randomBytes(32).toString('base64url');
    const now = this.now();
    for (const [key, login] of this.pending) if (now - login.startedAt > LOGIN_TIMEOUT_MS) this.pending.delete(key);
    if (this.pending.size >= MAX_PENDING) {
      const oldest = this.pending.keys().next().value;
      if (oldest !== undefined) this.pending.delete(oldest);
    }
    this.pending.set(state, { verifier, startedAt: now });
    const url = endpointsOf(this.provider).authorization;
    url.search = new URLSearchParams({
      response_type: 'code',
      client_id: this.provider.resource,
      redirect_uri: this.redirectUri(),
      scope: 'openid',
      state,
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
    }).toString();
    return { location: url.href, state };
  }

  /**
   * Finishes a sign-in: checks the state against the browser's cookie and the pending table, then exchanges the code
   * (with the verifier) for an access token. 400 for a callback that does not belong to a sign-in started here.
   */
  async finish(params: URLSearchParams, cookieState: string | undefined): Promise<string> {
    const error = params.get('error');
    const state = params.get('state') ?? '';
    const login = this.pending.get(state);
    this.pending.delete(state);
    if (error !== null) throw new ApiError(401, `the identity provider refused the sign-in: ${params.get('error_description') ?? error}`);
    if (login === undefined || cookieState !== state || this.now() - login.startedAt > LOGIN_TIMEOUT_MS) {
      throw new ApiError(400, 'this sign-in was not started here, was used already or took too long; sign in again', 'state');
    }
    const code = params.get('code');
    if (code === null || code === '') throw new ApiError(400, 'the identity provider sent no code', 'code');
    const form = new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: this.redirectUri(),
      client_id: this.provider.resource,
      code_verifier: login.verifier,
      ...(this.provider.clientSecret === undefined ? {} : { client_secret: this.provider.clientSecret }),
    });
    let response: Response;
    try {
      response = await fetch(endpointsOf(this.provider).token, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: form,
        signal: AbortSignal.timeout(10_000),
      });
    } catch (cause) {
      throw new ApiError(503, 'the identity provider cannot be reached', undefined, { cause });
    }
    const body = (await response.json().catch(() => ({}))) as { access_token?: unknown; error?: unknown };
    if (!response.ok || typeof body.access_token !== 'string') {
      throw new ApiError(401, `the identity provider did not give a token (${typeof body.error === 'string' ? body.error : `HTTP ${response.status}`})`);
    }
    return body.access_token;
  }
}
