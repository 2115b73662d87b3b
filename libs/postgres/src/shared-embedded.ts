import { resolve } from 'node:path';
import { type EmbeddedPostgres, type EmbeddedPostgresOptions, startEmbeddedPostgres } from './embedded-postgres.js';

interface Shared {
  readonly started: Promise<EmbeddedPostgres>;
  users: number;
}

/**
 * shared_buffers of the services' embedded database unless the options say otherwise. It holds key rings, secrets
 * and the skill registry: kilobytes, for which PostgreSQL's 128MB of buffers only cost the process about 125 MB
 * of memory it never gives back.
 */
export const SERVICE_DATABASE_SHARED_BUFFERS = '16MB';

/** The embedded servers this process shares, by absolute data directory. */
const shared = new Map<string, Shared>();

/**
 * The embedded PostgreSQL on `options.dataDir`, shared by every service of this process that asks for it (the
 * secrets service and the skill gateway in one `loom serve`): the first call starts it, later calls get the same
 * server, and it stops when the last user closes its handle. Only one process can open a data directory, so
 * services in one process must share it rather than start their own. The first caller's host and port win.
 */
export async function acquireEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const dataDir = resolve(options.dataDir);
  let entry = shared.get(dataDir);
  if (entry === undefined) {
    const created: Shared = { started: startEmbeddedPostgres({ sharedBuffers: SERVICE_DATABASE_SHARED_BUFFERS, ...options }), users: 0 };
    entry = created;
    shared.set(dataDir, created);
    // a failed start is not kept: the next caller tries again
    created.started.catch(() => {
      if (shared.get(dataDir) === created) shared.delete(dataDir);
    });
  }
  entry.users++;
  let server: EmbeddedPostgres;
  try {
    server = await entry.started;
  } catch (error) {
    entry.users--;
    throw error;
  }
  const owner = entry;
  let released = false;
  return {
    url: server.url,
    host: server.host,
    port: server.port,
    dataDir: server.dataDir,
    connectionCounts: () => server.connectionCounts(),
    async close() {
      if (released) return;
      released = true;
      owner.users--;
      if (owner.users > 0) return;
      if (shared.get(dataDir) === owner) shared.delete(dataDir);
      await server.close();
    },
  };
}
