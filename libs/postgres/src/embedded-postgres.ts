import { existsSync } from 'node:fs';
import { chmod, cp, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { BlockList, isIPv6 } from 'node:net';
import { join, resolve } from 'node:path';
import { type Extensions, PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { BUILT_TEMPLATE_DIR } from './built-template.js';
import { LOCK_FILE_NAME, lockDataDir } from './data-dir-lock.js';
import { registerEmbeddedAddress } from './embedded-registry.js';
import { EmbeddedPostgresStartError, NonLoopbackHostError } from './errors.js';
import { type EmbeddedConnectionCounts, InMemoryConnector, type SocketStandIn } from './in-memory-connection.js';
import { withSessionAffinity } from './session-affinity.js';

/**
 * How many client connections the embedded server accepts at once. pglite-socket 0.2.17 accepts one by default
 * (a second concurrent one is reset); above one it multiplexes every connection onto PGlite's single session,
 * which withSessionAffinity makes safe per request and per transaction. Pools for it use one connection each; those of
 * this process connect in memory and do not count here.
 */
export const EMBEDDED_MAX_CONNECTIONS = 32;

/** Where the embedded server writes what it does (a pino logger fits). */
export interface EmbeddedPostgresLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/** Options of startEmbeddedPostgres. */
export interface EmbeddedPostgresOptions {
  /** Data directory (created with mode 0700); data persists across restarts. Only one process may open it. */
  readonly dataDir: string;
  /** Loopback address to listen on; default 127.0.0.1. Any other address is refused: there is no authentication. */
  readonly host?: string;
  /** Port; default 0, any free port (read it back from `port`). */
  readonly port?: number;
  readonly logger?: EmbeddedPostgresLogger;
  /** PGlite extensions to load, e.g. `{ age }` from `@electric-sql/pglite-age`. */
  readonly extensions?: Extensions;
  /**
   * PostgreSQL's shared_buffers, e.g. `16MB`; default PostgreSQL's own (128MB). Touched buffers stay in the
   * process's WebAssembly memory, so a small database serves as well with a small setting and a smaller process.
   */
  readonly sharedBuffers?: string;
  /**
   * An empty, cleanly closed data directory that a fresh one is copied from instead of running initdb; default the
   * one the build makes (dist/pgdata-template, see scripts/make-template.mjs; from the sources, the package's dist/ one
   * when its stamp is current: builtTemplateDir). When it does not exist, initdb runs.
   */
  readonly templateDir?: string;
  /**
   * Keep the port in the data directory (file loom-port) and listen on it again at the next start with port 0, so the
   * address stays the same across restarts. When that port is taken by then, it listens on another and warns in one
   * line naming `setting`, the key that fixes a port.
   */
  readonly rememberPort?: { readonly setting: string };
}

/**
 * Makes `dir` a template data directory (the build's is dist/pgdata-template, see scripts/make-template.mjs): PGlite's
 * initdb, then without template0, closed cleanly. template0 is the pristine copy that `CREATE DATABASE … TEMPLATE
 * template0` and restores with `--create` start from; loom's embedded databases never use it, and its ~300 files were
 * a third of the files every fresh data directory copies, where creating files is most of what a fresh start costs on
 * a slow disk. CREATE DATABASE goes on working from template1.
 */
export async function makeTemplateDataDir(dir: string): Promise<void> {
  const db = await PGlite.create(dir);
  try {
    // each its own statement: DROP DATABASE cannot run in the transaction a multi-statement query is
    await db.query('ALTER DATABASE template0 IS_TEMPLATE false');
    await db.query('DROP DATABASE template0');
    await db.query('CHECKPOINT');
  } finally {
    await db.close();
  }
}

/** Present in a data directory while it is being filled from the template; a start that finds it fills it again. */
const SEEDING_MARKER = 'loom-seeding';

/** A running embedded PostgreSQL (PGlite served over the PostgreSQL wire protocol on loopback). */
export interface EmbeddedPostgres {
  /** `postgresql://postgres@<host>:<port>/postgres`, for createPool or psql. */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  /** Absolute path of the data directory. */
  readonly dataDir: string;
  /** How many connections it has taken over TCP and in memory (createPool's pools of this process connect in memory). */
  connectionCounts(): EmbeddedConnectionCounts;
  /** Stops accepting connections, closes the open ones and closes PGlite (flushed to disk); safe to call twice. */
  close(): Promise<void>;
}

const loopback = new BlockList();
loopback.addSubnet('127.0.0.0', 8, 'ipv4');
loopback.addAddress('::1', 'ipv6');
loopback.addSubnet('::ffff:127.0.0.0', 104, 'ipv6');

/** True for localhost and the loopback addresses (127.0.0.0/8, ::1). */
export function isLoopbackHost(host: string): boolean {
  if (host.toLowerCase() === 'localhost') return true;
  const address = host.replace(/^\[(.*)\]$/, '$1');
  try {
    return loopback.check(address, isIPv6(address) ? 'ipv6' : 'ipv4');
  } catch {
    return false; // not an IP address: a host name other than localhost
  }
}

/**
 * Opens PGlite on `dataDir` and serves it with pglite-socket on a loopback port, so the same `pg` code (and
 * `psql -h 127.0.0.1 -p <port> -U postgres`) talks to it. PGlite has one session: connections take turns per request
 * and per transaction, session settings (SET, search_path) are shared by all, and a connection that sits idle in a
 * transaction holds up every other one. Use createPool, which gives each pool one connection to it; in this process that
 * connection is in memory (no socket: the same wire protocol, the same turns on the session), over TCP from elsewhere.
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const { host, dataDir } = await prepareDataDir(options);
  const lock = lockDataDir(dataDir);
  try {
    return await serveLockedDataDir({ ...options, host, dataDir }, { release: () => lock.release() });
  } catch (error) {
    lock.release();
    throw error;
  }
}

/** Checks that the host is a loopback one and makes the data directory (mode 0700); answers both, the directory absolute. */
export async function prepareDataDir(options: Pick<EmbeddedPostgresOptions, 'host' | 'dataDir'>): Promise<{ host: string; dataDir: string }> {
  const host = options.host ?? '127.0.0.1';
  if (!isLoopbackHost(host)) throw new NonLoopbackHostError(host);
  const dataDir = resolve(options.dataDir);
  try {
    await mkdir(dataDir, { recursive: true, mode: 0o700 });
    await chmod(dataDir, 0o700);
  } catch (error) {
    throw new EmbeddedPostgresStartError(dataDir, `cannot create the data directory: ${errorText(error)}`, { cause: error });
  }
  return { host, dataDir };
}

/** What serveLockedDataDir is told besides the options. */
export interface ServeHooks {
  /** Gives the data directory's lock up; called once the server has closed. */
  readonly release: () => void;
  /** Called for every TCP connection the server accepts. */
  readonly onTcpAccepted?: () => void;
}

/** A server serveLockedDataDir started: an EmbeddedPostgres, and its connections in memory for the thread it runs on. */
export interface ServedEmbeddedPostgres extends EmbeddedPostgres {
  /** A new connection in memory's client end (InMemoryConnector.open). */
  openInMemory(): SocketStandIn;
}

/**
 * Opens PGlite on a prepared data directory whose lock the caller holds, and serves it (startEmbeddedPostgres, and the
 * worker thread of startEmbeddedPostgresInWorker, whose lock the main thread holds). On failure the lock stays the caller's.
 */
export async function serveLockedDataDir(
  options: EmbeddedPostgresOptions & { readonly host: string; readonly dataDir: string },
  hooks: ServeHooks,
): Promise<ServedEmbeddedPostgres> {
  const { host, dataDir, logger } = options;
  const initialised = existsSync(join(dataDir, 'PG_VERSION'));

  let db: PGlite | undefined;
  let server: PGLiteSocketServer | undefined;
  let connector: InMemoryConnector;
  let port: number;
  let seeded = false;
  try {
    if (!initialised) seeded = await seedFromTemplate(dataDir, options.templateDir ?? BUILT_TEMPLATE_DIR);
    db = await openPglite(dataDir, options.extensions, options.sharedBuffers);
    const served = withSessionAffinity(db, (error) => logger?.warn({ err: error, dataDir }, 'embedded PostgreSQL could not roll back a closed connection'));
    const listen = async (on: number): Promise<PGLiteSocketServer> => {
      const socketServer = new PGLiteSocketServer({ db: served, host, port: on, maxConnections: EMBEDDED_MAX_CONNECTIONS });
      try {
        await socketServer.start();
      } catch (error) {
        await socketServer.stop().catch(() => undefined);
        throw new EmbeddedPostgresStartError(dataDir, `cannot listen on ${host}:${on}: ${errorText(error)}`, { cause: error });
      }
      // listened for once it serves: a port that is taken is the error above, told once
      socketServer.addEventListener('error', (event) => {
        logger?.warn({ err: (event as Event & { detail?: unknown }).detail, dataDir }, 'embedded PostgreSQL server error');
      });
      const onTcpAccepted = hooks.onTcpAccepted;
      if (onTcpAccepted !== undefined) socketServer.addEventListener('connection', () => onTcpAccepted());
      return socketServer;
    };
    server = await listenKeepingPort(listen, options);
    connector = new InMemoryConnector(server, dataDir);
    port = portOf(server);
  } catch (error) {
    await server?.stop();
    await db?.close();
    throw error;
  }

  const inMemory = connector;
  const unregister = registerEmbeddedAddress(host, port, () => inMemory.open());
  const url = embeddedUrl(host, port);
  logger?.info({ dataDir, host, port, created: initialised ? false : seeded ? 'from template' : 'by initdb' }, 'embedded PostgreSQL started');

  const runningServer = server;
  const runningDb = db;
  let closing: Promise<void> | undefined;
  return {
    url,
    host,
    port,
    dataDir,
    connectionCounts: () => inMemory.counts(),
    openInMemory: () => inMemory.open(),
    close() {
      closing ??= (async () => {
        unregister();
        try {
          await inMemory.close();
          await runningServer.stop();
          await runningDb.close();
        } finally {
          hooks.release();
        }
        logger?.info({ dataDir }, 'embedded PostgreSQL stopped');
      })();
      return closing;
    },
  };
}

/**
 * Listens on the configured port; with rememberPort and port 0, on the port of the last start again (another when that
 * one is taken, said in one line), and keeps the port for the next start.
 */
async function listenKeepingPort(
  listen: (port: number) => Promise<PGLiteSocketServer>,
  options: EmbeddedPostgresOptions & { readonly dataDir: string },
): Promise<PGLiteSocketServer> {
  const { dataDir, logger, rememberPort: keep } = options;
  const remembered = keep === undefined || (options.port ?? 0) !== 0 ? undefined : await rememberedPort(dataDir);
  let server: PGLiteSocketServer;
  if (keep === undefined || remembered === undefined) {
    server = await listen(options.port ?? 0);
  } else {
    try {
      server = await listen(remembered);
    } catch (error) {
      if (!(error instanceof EmbeddedPostgresStartError) || !isAddressInUse(error.cause)) throw error;
      server = await listen(0);
      logger?.warn(
        { dataDir, port: remembered, now: portOf(server) },
        `the port ${remembered} it listened on before is taken, so it listens on ${portOf(server)} now: set ${keep.setting} to a free port to keep one`,
      );
    }
  }
  if (keep !== undefined && portOf(server) !== remembered) await rememberPort(dataDir, portOf(server), logger);
  return server;
}

/** The file in a data directory that keeps the port its server last listened on (EmbeddedPostgresOptions.rememberPort). */
export const PORT_FILE_NAME = 'loom-port';

/** The port a data directory's server last listened on, when it kept one (EmbeddedPostgresOptions.rememberPort). */
export async function rememberedPort(dataDir: string): Promise<number | undefined> {
  let text: string;
  try {
    text = await readFile(join(dataDir, PORT_FILE_NAME), 'utf8');
  } catch {
    return undefined; // never kept one (or unreadable): any free port, as on the first start
  }
  const port = Number(text.trim());
  return Number.isInteger(port) && port > 0 && port < 65536 ? port : undefined;
}

/** Keeps the port in the data directory; a failure costs only the next start's stable address, so it is logged, not thrown. */
async function rememberPort(dataDir: string, port: number, logger: EmbeddedPostgresLogger | undefined): Promise<void> {
  try {
    await writeFile(join(dataDir, PORT_FILE_NAME), `${port}\n`, { mode: 0o600 });
  } catch (error) {
    logger?.warn({ dataDir, port, err: errorText(error) }, 'the embedded PostgreSQL could not keep its port for the next start');
  }
}

function portOf(server: PGLiteSocketServer): number {
  const connection = server.getServerConn();
  return Number(connection.slice(connection.lastIndexOf(':') + 1));
}

function isAddressInUse(error: unknown): boolean {
  return (error as { code?: unknown } | undefined)?.code === 'EADDRINUSE';
}

/** `postgresql://postgres@<host>:<port>/postgres`. */
export function embeddedUrl(host: string, port: number): string {
  return `postgresql://postgres@${isIPv6(host) ? `[${host}]` : host}:${port}/postgres`;
}

/**
 * Fills a new data directory from the template, PG_VERSION last (PGlite takes a directory with PG_VERSION as
 * initialised), and answers true; answers false, leaving it to initdb, when there is no template or the directory
 * holds anything but loom's own files (it is not a directory loom created).
 */
async function seedFromTemplate(dataDir: string, templateDir: string): Promise<boolean> {
  if (!existsSync(join(templateDir, 'PG_VERSION'))) return false;
  const marker = join(dataDir, SEEDING_MARKER);
  const resuming = existsSync(marker);
  const foreign = (await readdir(dataDir)).filter((name) => name !== LOCK_FILE_NAME && name !== SEEDING_MARKER && name !== PORT_FILE_NAME);
  if (foreign.length > 0 && !resuming) return false;
  try {
    await writeFile(marker, '');
    for (const name of await readdir(templateDir)) {
      if (name !== 'PG_VERSION') await cp(join(templateDir, name), join(dataDir, name), { recursive: true, force: true });
    }
    await cp(join(templateDir, 'PG_VERSION'), join(dataDir, 'PG_VERSION'));
    await rm(marker);
  } catch (error) {
    throw new EmbeddedPostgresStartError(dataDir, `cannot copy the template data directory ${templateDir}: ${errorText(error)}`, { cause: error });
  }
  return true;
}

async function openPglite(dataDir: string, extensions: Extensions | undefined, sharedBuffers: string | undefined): Promise<PGlite> {
  try {
    return await PGlite.create(dataDir, {
      ...(extensions === undefined ? {} : { extensions }),
      ...(sharedBuffers === undefined ? {} : { startParams: [...PGlite.defaultStartParams, '-c', `shared_buffers=${sharedBuffers}`] }),
    });
  } catch (error) {
    throw new EmbeddedPostgresStartError(dataDir, `PGlite cannot open the data directory: ${errorText(error)}`, { cause: error });
  }
}

/** An error's message, or what was thrown as text. */
export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
