import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { type AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, type JWK, type JWTPayload, SignJWT } from 'jose';
import { type IdentityProviderConfig } from './provider-config.js';

type PrivateKey = Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];

interface SigningKey {
  readonly kid: string;
  readonly privateKey: PrivateKey;
  readonly publicJwk: JWK;
}

/** Claims of a test token beyond the defaults (issuer, subject, one hour of validity). */
export interface TestTokenClaims extends JWTPayload {
  readonly preferred_username?: string;
  readonly resource_access?: Record<string, { roles: string[] }>;
  readonly realm_access?: { roles: string[] };
}

/** A code the authorization endpoint handed out, waiting for its exchange at the token endpoint. */
interface PendingCode {
  readonly clientId: string;
  readonly redirectUri: string;
  readonly challenge: string;
  readonly user: string;
  readonly roles: readonly string[];
}

/**
 * An identity provider on loopback for tests: a realm's JWKS (with key rotation), a token
 * endpoint for the client credentials flow, a device authorization endpoint, and an
 * authorization endpoint for the authorization code flow with PKCE (S256) that signs in
 * `signInAs` at once, at the paths a Keycloak realm serves them. It signs tokens with its current key.
 */
export class FakeIdentityProvider {
  /** How many times the JWKS was fetched. */
  jwksFetches = 0;
  /** The next device-code poll answers: `authorization_pending` as many times as this says first. */
  pendingPolls = 0;
  /** Who the authorization endpoint signs in, without asking (a browser test's user), and their provider roles. */
  signInAs: { user: string; roles: string[] } = { user: 'alice', roles: ['loom_operator'] };
  /** The authorization requests received, as their query parameters. */
  readonly authorizationRequests: URLSearchParams[] = [];
  private keys: SigningKey[] = [];
  private readonly codes = new Map<string, PendingCode>();

  private constructor(
    private readonly server: Server,
    readonly realm: string,
  ) {}

  /** Starts the provider on 127.0.0.1:0 with one signing key. */
  static async start(realm = 'loom'): Promise<FakeIdentityProvider> {
    const server = createServer();
    const provider = new FakeIdentityProvider(server, realm);
    server.on('request', (request, response) => provider.handle(request.url ?? '/', request.method ?? 'GET', request, response));
    await provider.rotateKey();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return provider;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  get issuer(): string {
    return `${this.url}/realms/${this.realm}`;
  }

  /** An installation configuration for a client of this realm. */
  config(overrides: Partial<IdentityProviderConfig> = {}): IdentityProviderConfig {
    return {
      realm: this.realm,
      authServerUrl: this.url,
      sslRequired: 'none',
      resource: 'loom',
      verifyTokenAudience: true,
      clientSecret: 'test-client-secret',
      useResourceRoleMappings: true,
      confidentialPort: 0,
      policyEnforcer: undefined,
      ...overrides,
    };
  }

  /** Adds a new current signing key; the old ones stay published unless `retire` is set. */
  async rotateKey(retire = false): Promise<string> {
    const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
    const kid = `key-${this.keys.length + 1}`;
    const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' };
    this.keys = retire ? [{ kid, privateKey, publicJwk }] : [...this.keys, { kid, privateKey, publicJwk }];
    return kid;
  }

  /** The current key's public JWK (tests forge tokens with it). */
  get publicJwk(): JWK {
    return this.current().publicJwk;
  }

  /** A token signed with the current key: issuer, subject `user-1`, audience `loom`, valid one hour unless overridden. */
  async sign(claims: TestTokenClaims = {}, options: { kid?: string; key?: PrivateKey } = {}): Promise<string> {
    const key = this.current();
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({ iss: this.issuer, sub: 'user-1', aud: 'loom', iat: now, exp: now + 3600, ...claims })
      .setProtectedHeader({ alg: 'RS256', kid: options.kid ?? key.kid, typ: 'JWT' })
      .sign(options.key ?? key.privateKey);
  }

  /** The roles claim of a client of this realm, as the provider writes it. */
  static clientRoles(client: string, roles: string[]): Pick<TestTokenClaims, 'resource_access'> {
    return { resource_access: { [client]: { roles } } };
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** The authorization endpoint: refuses what Keycloak refuses for a public client with PKCE, else redirects back with a code. */
  private authorize(params: URLSearchParams, response: ServerResponse): void {
    this.authorizationRequests.push(params);
    const redirectUri = params.get('redirect_uri') ?? '';
    const challenge = params.get('code_challenge') ?? '';
    if (params.get('response_type') !== 'code' || params.get('client_id') !== 'loom' || !/^https?:\/\//.test(redirectUri)) {
      response.writeHead(400, { 'content-type': 'text/plain' }).end('invalid authorization request');
      return;
    }
    if (params.get('code_challenge_method') !== 'S256' || challenge === '') {
      response.writeHead(400, { 'content-type': 'text/plain' }).end('PKCE (code_challenge with S256) is required');
      return;
    }
    const code = randomBytes(16).toString('base64url');
    this.codes.set(code, { clientId: 'loom', redirectUri, challenge, user: this.signInAs.user, roles: [...this.signInAs.roles] });
    const back = new URL(redirectUri);
    back.searchParams.set('code', code);
    back.searchParams.set('state', params.get('state') ?? '');
    response.writeHead(302, { location: back.href }).end();
  }

  /** The token endpoint's authorization_code grant: the code once, with the verifier of its challenge and the same redirect address. */
  private exchangeCode(form: URLSearchParams, send: (statusCode: number, body: unknown) => void): void {
    const code = form.get('code') ?? '';
    const pending = this.codes.get(code);
    this.codes.delete(code);
    const verifier = form.get('code_verifier') ?? '';
    if (
      pending === undefined ||
      pending.redirectUri !== form.get('redirect_uri') ||
      pending.clientId !== form.get('client_id') ||
      createHash('sha256').update(verifier).digest('base64url') !== pending.challenge
    ) {
      send(400, { error: 'invalid_grant' });
      return;
    }
    void this.sign({ sub: pending.user, preferred_username: pending.user, ...FakeIdentityProvider.clientRoles('loom', [...pending.roles]) }).then((token) =>
      send(200, { access_token: token, token_type: 'Bearer', expires_in: 3600 }),
    );
  }

  private current(): SigningKey {
    const key = this.keys.at(-1);
    // rotateKey runs in start(), so there is always a current key
    return key as SigningKey;
  }

  private handle(url: string, method: string, request: IncomingMessage, response: ServerResponse): void {
    const base = `/realms/${this.realm}/protocol/openid-connect`;
    const send = (statusCode: number, body: unknown): void => {
      response.writeHead(statusCode, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    };
    if (method === 'GET' && url.startsWith(`${base}/auth?`)) {
      this.authorize(new URL(url, this.url).searchParams, response);
      return;
    }
    if (method === 'GET' && url === `${base}/certs`) {
      this.jwksFetches += 1;
      send(200, { keys: this.keys.map((key) => key.publicJwk) });
      return;
    }
    if (method !== 'POST') {
      send(404, { error: 'not_found' });
      return;
    }
    let text = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => (text += chunk));
    request.on('end', () => {
      const form = new URLSearchParams(text);
      if (url === `${base}/auth/device`) {
        send(200, { device_code: 'device-1', user_code: 'ABCD-EFGH', verification_uri: `${this.url}/device`, expires_in: 60, interval: 0 });
        return;
      }
      if (url !== `${base}/token`) {
        send(404, { error: 'not_found' });
        return;
      }
      const grant = form.get('grant_type');
      if (grant === 'authorization_code') {
        this.exchangeCode(form, send);
        return;
      }
      if (grant === 'client_credentials' && form.get('client_secret') !== 'test-client-secret') {
        send(401, { error: 'unauthorized_client' });
        return;
      }
      if (grant === 'urn:ietf:params:oauth:grant-type:device_code' && this.pendingPolls > 0) {
        this.pendingPolls -= 1;
        send(400, { error: 'authorization_pending' });
        return;
      }
      const roles = grant === 'client_credentials' ? ['loom_admin'] : ['loom_viewer'];
      void this.sign({
        preferred_username: grant === 'client_credentials' ? 'service-account-loom' : 'alice',
        ...FakeIdentityProvider.clientRoles('loom', roles),
      }).then((token) => send(200, { access_token: token, token_type: 'Bearer', expires_in: 3600 }));
    });
  }
}
