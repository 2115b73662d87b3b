import { readFileSync } from 'node:fs';
import { formatJsonPath, parseJsonText, parseWithSchema, ValidationError } from '@loom/domain';
import { z } from 'zod';

/**
 * The identity provider's installation configuration (the OIDC client adapter JSON a Keycloak
 * realm exports for a client, `keycloak.json`), as the specification places it in the graph
 * database's `conf` directory. Only the fields below are read; unknown ones are kept out.
 */
export interface IdentityProviderConfig {
  /** The realm; with `authServerUrl` it gives the issuer `<auth-server-url>/realms/<realm>`. */
  readonly realm: string;
  readonly authServerUrl: string;
  /** `all`, `external` (default) or `none`: whether the provider must be reached over TLS. */
  readonly sslRequired: 'all' | 'external' | 'none';
  /** The client id; its client roles are read when `useResourceRoleMappings`. */
  readonly resource: string;
  readonly verifyTokenAudience: boolean;
  /** The confidential client's secret (client credentials flow); never logged. */
  readonly clientSecret: string | undefined;
  readonly useResourceRoleMappings: boolean;
  readonly confidentialPort: number;
  /** Present (possibly empty) when the provider's authorization services are enabled for the client. */
  readonly policyEnforcer: Readonly<Record<string, unknown>> | undefined;
}

const schema = z.object({
  realm: z.string().min(1, 'must name the realm'),
  'auth-server-url': z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }),
  'ssl-required': z.enum(['all', 'external', 'none']).default('external'),
  resource: z.string().min(1, 'must name the client (resource)'),
  'verify-token-audience': z.boolean().default(false),
  credentials: z
    .object({ secret: z.string().min(1, 'must not be empty') })
    .partial()
    .optional(),
  'use-resource-role-mappings': z.boolean().default(false),
  'confidential-port': z.number().int().min(0).max(65535).default(0),
  'policy-enforcer': z.record(z.string(), z.unknown()).optional(),
});

/** Parses the installation configuration; a malformed file is a ValidationError naming the field. */
export function parseIdentityProviderConfig(text: string): IdentityProviderConfig {
  let document: unknown;
  try {
    document = parseJsonText(text);
  } catch (error) {
    throw ValidationError.of('', `not JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  const parsed = parseWithSchema(schema, document);
  const config: IdentityProviderConfig = {
    realm: parsed.realm,
    authServerUrl: parsed['auth-server-url'].replace(/\/+$/, ''),
    sslRequired: parsed['ssl-required'],
    resource: parsed.resource,
    verifyTokenAudience: parsed['verify-token-audience'],
    clientSecret: parsed.credentials?.secret,
    useResourceRoleMappings: parsed['use-resource-role-mappings'],
    confidentialPort: parsed['confidential-port'],
    policyEnforcer: parsed['policy-enforcer'],
  };
  if (config.sslRequired === 'all' && !config.authServerUrl.startsWith('https:')) {
    throw ValidationError.of(formatJsonPath(['auth-server-url']), "must be an https URL when ssl-required is 'all'");
  }
  return config;
}

/** A provider configuration file that cannot be read or parsed; the message names the file. */
export class IdentityProviderConfigError extends Error {
  constructor(
    readonly file: string,
    message: string,
    options?: ErrorOptions,
  ) {
    super(`${file}: ${message}`, options);
    this.name = 'IdentityProviderConfigError';
  }
}

/** Reads and parses an installation configuration file; any failure is an IdentityProviderConfigError naming the file (and the field). */
export function readIdentityProviderConfig(file: string): IdentityProviderConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new IdentityProviderConfigError(file, `cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)})`, { cause: error });
  }
  try {
    return parseIdentityProviderConfig(text);
  } catch (error) {
    throw new IdentityProviderConfigError(file, error instanceof Error ? error.message : String(error), { cause: error });
  }
}

/** The issuer tokens of this realm carry in `iss`. */
export function issuerOf(config: IdentityProviderConfig): string {
  return `${config.authServerUrl}/realms/${encodeURIComponent(config.realm)}`;
}

/** The realm's OpenID Connect endpoints, at the paths the provider publishes them. */
export function endpointsOf(config: IdentityProviderConfig): {
  readonly jwks: URL;
  readonly token: URL;
  readonly deviceAuthorization: URL;
  /** Where a browser signs in (the authorization code flow, the console's sign-in). */
  readonly authorization: URL;
} {
  const base = `${issuerOf(config)}/protocol/openid-connect`;
  return {
    jwks: new URL(`${base}/certs`),
    token: new URL(`${base}/token`),
    deviceAuthorization: new URL(`${base}/auth/device`),
    authorization: new URL(`${base}/auth`),
  };
}
