import { type Client } from '@grpc/grpc-js';
import { type ClientConstructor, createClient } from '@loom/service-kit/client';
import { type Command } from 'commander';
import { type GlobalOptions } from './global-options.js';
import { loadToken } from './token-cache.js';

/** The token presented to loom: `--token` (or LOOM_TOKEN), else the one `loom login` kept while it is valid. */
export function presentedToken(globals: GlobalOptions): string | undefined {
  return globals.token ?? loadToken()?.accessToken;
}

/** Runs `use` with a client of one service at `--address`, presenting `--token`, and closes the client afterwards. */
export async function withClient<C extends Client, T>(
  command: Command,
  constructor: ClientConstructor<C>,
  use: (client: C, globals: GlobalOptions) => Promise<T>,
): Promise<T> {
  const globals = command.optsWithGlobals<GlobalOptions>();
  const token = presentedToken(globals);
  const client = createClient(constructor, globals.address, token === undefined ? {} : { token });
  try {
    return await use(client, globals);
  } finally {
    client.close();
  }
}
