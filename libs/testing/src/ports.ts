import { AssertionError } from 'node:assert';
import { createServer } from 'node:net';

/**
 * A loopback TCP port nothing listens on at this moment (bound, read back, closed): a port that
 * refuses connections, or one to give a process that must know its port before it starts.
 */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new AssertionError({ message: 'the server has no TCP address' });
  return address.port;
}
