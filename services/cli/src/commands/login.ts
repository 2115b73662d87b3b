import { endpointsOf, type IdentityProviderConfig, IdentityProviderConfigError, issuerOf, readIdentityProviderConfig } from '@loom/identity';
import { type Command, Option } from 'commander';
import { UsageError } from '../usage-error.js';
import { forgetToken, saveToken, tokenCachePath } from '../token-cache.js';
import { cliIo } from '../cli-io.js';

interface TokenAnswer {
  readonly access_token?: string;
  readonly expires_in?: number;
  readonly error?: string;
  readonly error_description?: string;
}

const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

function readProvider(file: string): IdentityProviderConfig {
  try {
    return readIdentityProviderConfig(file);
  } catch (error) {
    if (!(error instanceof IdentityProviderConfigError)) throw error;
    throw new UsageError(error.message);
  }
}

async function post(url: URL, form: Record<string, string>): Promise<{ status: number; body: TokenAnswer & Record<string, unknown> }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: new URLSearchParams(form),
    signal: AbortSignal.timeout(15_000),
  });
  return { status: response.status, body: (await response.json()) as TokenAnswer & Record<string, unknown> };
}

function clientForm(provider: IdentityProviderConfig): Record<string, string> {
  return { client_id: provider.resource, ...(provider.clientSecret === undefined ? {} : { client_secret: provider.clientSecret }) };
}

/** The client credentials flow: a service account's token, with the client secret of the installation file. */
async function clientCredentials(provider: IdentityProviderConfig): Promise<TokenAnswer> {
  if (provider.clientSecret === undefined) throw new UsageError('--client-credentials needs credentials.secret in the provider file');
  const { body } = await post(endpointsOf(provider).token, { grant_type: 'client_credentials', ...clientForm(provider) });
  return body;
}

/** The device authorization flow: the operator confirms a code in a browser, this command polls for the token. */
async function deviceCode(provider: IdentityProviderConfig): Promise<TokenAnswer> {
  const { token, deviceAuthorization } = endpointsOf(provider);
  const { status, body: device } = await post(deviceAuthorization, clientForm(provider));
  if (status !== 200 || typeof device.device_code !== 'string') {
    throw new UsageError(`the identity provider refused the device login: ${device.error_description ?? device.error ?? `HTTP ${status}`}`);
  }
  const where = typeof device.verification_uri_complete === 'string' ? device.verification_uri_complete : String(device.verification_uri);
  cliIo().stderr.write(`To sign in, open ${where} and enter the code ${String(device.user_code)}\n`);
  let intervalMs = (typeof device.interval === 'number' ? device.interval : 5) * 1000;
  const deadline = Date.now() + (typeof device.expires_in === 'number' ? device.expires_in : 600) * 1000;
  while (Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
    const { body } = await post(token, { grant_type: DEVICE_GRANT, device_code: device.device_code, ...clientForm(provider) });
    if (body.error === 'authorization_pending') continue;
    if (body.error === 'slow_down') {
      intervalMs += 5000;
      continue;
    }
    return body;
  }
  throw new UsageError('the device code expired before the sign-in was confirmed; run loom login again');
}

/** `loom login` and `loom logout`: an identity-provider token for loom's API and `loom graph query --sso`. */
export function addLoginCommands(program: Command): void {
  program
    .command('login')
    .description('sign in with the identity provider and keep the access token for later commands (device code flow, or --client-credentials)')
    .addOption(
      new Option('--provider <file>', "the provider's installation configuration (OIDC client JSON) of loom's client")
        .env('LOOM_OIDC_PROVIDER')
        .makeOptionMandatory(),
    )
    .option('--client-credentials', "sign in as the client's service account with credentials.secret of the provider file", false)
    .action(async (options: { provider: string; clientCredentials: boolean }) => {
      const provider = readProvider(options.provider);
      const answer = options.clientCredentials ? await clientCredentials(provider) : await deviceCode(provider);
      if (typeof answer.access_token !== 'string') {
        throw new UsageError(`the identity provider gave no token: ${answer.error_description ?? answer.error ?? 'no reason given'}`);
      }
      const expiresAt = new Date(Date.now() + (answer.expires_in ?? 300) * 1000).toISOString();
      saveToken({ accessToken: answer.access_token, expiresAt, issuer: issuerOf(provider) });
      cliIo().stderr.write(`signed in to ${issuerOf(provider)}; the token is kept in ${tokenCachePath()} until ${expiresAt}\n`);
    });

  program
    .command('logout')
    .description('forget the access token loom login kept')
    .action(() => {
      forgetToken();
    });
}
