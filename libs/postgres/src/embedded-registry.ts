import { type Duplex } from 'node:stream';

/** Opens a connection in memory to an embedded server of this process (InMemoryConnector.open). */
export type EmbeddedConnect = () => Duplex;

/** Every embedded PostgreSQL this process serves, by host:port, so createPool can recognise their URLs and reach them in memory. */
const servedAddresses = new Map<string, EmbeddedConnect>();

function key(host: string, port: number): string {
  return `${host.replace(/^\[(.*)\]$/, '$1').toLowerCase()}:${port}`;
}

/** Records an embedded server's address and how to connect to it in memory; the returned function forgets it again. */
export function registerEmbeddedAddress(host: string, port: number, connect: EmbeddedConnect): () => void {
  const entry = key(host, port);
  servedAddresses.set(entry, connect);
  return () => {
    if (servedAddresses.get(entry) === connect) servedAddresses.delete(entry);
  };
}

/** True when host:port is an embedded PostgreSQL served by this process. */
export function isEmbeddedAddress(host: string, port: number): boolean {
  return servedAddresses.has(key(host, port));
}

/** How to connect in memory to the embedded PostgreSQL this process serves on host:port; undefined when it serves none there. */
export function embeddedConnect(host: string, port: number): EmbeddedConnect | undefined {
  return servedAddresses.get(key(host, port));
}
