import { type Client } from '@grpc/grpc-js';
import { type ClientConstructor, createClient } from '@loom/service-kit/client';
import { type Command } from 'commander';
import { type GlobalOptions } from './global-options.js';

/** Runs `use` with a client of one service at `--address`, presenting `--token`, and closes the client afterwards. */
export async function withClient<C extends Client, T>(
  command: Command,
  constructor: ClientConstructor<C>,
  use: (client: C, globals: GlobalOptions) => Promise<T>,
): Promise<T> {
  const globals = command.optsWithGlobals<GlobalOptions>();
  const client = createClient(constructor, globals.address, globals.token === undefined ? {} : { token: globals.token });
  try {
    return await use(client, globals);
  } finally {
    client.close();
  }
}
