/** host:port of every embedded PostgreSQL this process serves, so createPool can recognise their URLs. */
const servedAddresses = new Set<string>();

function key(host: string, port: number): string {
  return `${host.replace(/^\[(.*)\]$/, '$1').toLowerCase()}:${port}`;
}

/** Records an embedded server's address; the returned function forgets it again. */
export function registerEmbeddedAddress(host: string, port: number): () => void {
  const entry = key(host, port);
  servedAddresses.add(entry);
  return () => {
    servedAddresses.delete(entry);
  };
}

/** True when host:port is an embedded PostgreSQL served by this process. */
export function isEmbeddedAddress(host: string, port: number): boolean {
  return servedAddresses.has(key(host, port));
}
