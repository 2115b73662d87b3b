import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { type AddressInfo, type Socket } from 'node:net';
import { type LoomConfig } from '@loom/config';
import { Lifecycle, ListenError } from '@loom/foundation';
import { readIdentityProviderConfig } from '@loom/identity';
import { type Logger } from '@loom/telemetry';
import { ApiError, SECURITY_HEADERS, sendError } from './http-errors.js';
import { LoomCalls } from './loom-calls.js';
import { OidcLogin } from './oidc-login.js';
import { apiRoutes } from './api-routes.js';
import { MethodNotAllowedError, type Route, Router } from './routes.js';
import { csrfMatches, type Session, SessionStore } from './sessions.js';
import { TokenCheck } from './sign-in.js';
import { DEFAULT_STATIC_DIRECTORY, StaticFiles } from './static-files.js';
import { WorkflowViews } from './workflow-views.js';

/** What the console needs to run. */
export interface ConsoleOptions {
  /** loom's configuration: `loom.console.*`, `loom.auth` (who a token proves) and where the services are. */
  readonly config: LoomConfig;
  readonly logger: Logger;
  /** The gRPC address of the services without a `loom.services.<name>.address` (the `loom serve` process it runs in). */
  readonly grpcAddress: () => string;
}

/** A console serving on its port. */
export interface RunningConsole {
  readonly port: number;
  /** The address a browser opens: `loom.console.publicUrl`, else `http://<host>:<port>`. */
  readonly url: string;
  /** Closes the event streams and connections, then the server and its channels. Idempotent. */
  stop(): Promise<void>;
}

/** The cookie of a session; `__Host-` (Secure, whole site, no Domain) when the console is reached over https. */
export function sessionCookieName(secure: boolean): string {
  return secure ? '__Host-loom-console' : 'loom-console';
}
/** The cookie that ties an identity-provider sign-in's callback to the browser that started it. */
const LOGIN_COOKIE = 'loom-console-login';

/** The cookies of a request, by name. */
export function cookiesOf(request: IncomingMessage): Map<string, string> {
  const cookies = new Map<string, string>();
  for (const part of (request.headers.cookie ?? '').split(';')) {
    const index = part.indexOf('=');
    if (index > 0) cookies.set(part.slice(0, index).trim(), part.slice(index + 1).trim());
  }
  return cookies;
}

type ConsoleState = 'starting' | 'running' | 'stopping' | 'stopped';
const CONSOLE_TRANSITIONS = { starting: ['running', 'stopping'], running: ['stopping'], stopping: ['stopped'], stopped: [] } as const;

/** The console's server: its sessions, the API routes, the identity provider's sign-in and the built pages. */
export class ConsoleServer {
  readonly sessions: SessionStore;
  readonly loom: LoomCalls;
  readonly views: WorkflowViews;
  readonly tokens: TokenCheck;
  readonly staticFiles: StaticFiles;
  readonly oidc: OidcLogin | undefined;
  /** Whether the cookie is Secure (the console's public address is https). */
  readonly secure: boolean;
  private readonly server: Server;
  private readonly router: Router;
  private readonly lifecycle = new Lifecycle<ConsoleState>('console', CONSOLE_TRANSITIONS, 'starting');
  private readonly sockets = new Set<Socket>();
  /** Event streams open now: each ends at stop. */
  private readonly streams = new Set<() => void>();
  private listening: AddressInfo | undefined;

  constructor(private readonly options: ConsoleOptions) {
    const { config } = options;
    const console = config.console;
    this.secure = console.publicUrl?.startsWith('https:') === true;
    this.sessions = new SessionStore({ idleTimeoutMs: console.session.idleTimeoutMs, maxAgeMs: console.session.maxAgeMs });
    this.loom = new LoomCalls({ config, fallback: options.grpcAddress });
    this.views = new WorkflowViews(this.loom);
    this.tokens = new TokenCheck(config.auth);
    this.staticFiles = new StaticFiles(console.staticDirectory ?? DEFAULT_STATIC_DIRECTORY);
    const providerFile = config.auth.oidc.configFile;
    // the file was read (and refused when bad, naming the key) by the token check above
    this.oidc = providerFile === undefined ? undefined : new OidcLogin(readIdentityProviderConfig(providerFile), () => `${this.url}/auth/callback`);
    this.router = new Router([...this.authRoutes(), ...apiRoutes(this)]);
    this.server = createServer({ requestTimeout: 60_000, headersTimeout: 20_000 }, (request, response) => void this.handle(request, response));
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
  }

  /** Largest request body taken (loom.console.maxBodyBytes). */
  get maxBodyBytes(): number {
    return this.options.config.console.maxBodyBytes;
  }

  get logger(): Logger {
    return this.options.logger;
  }

  /** loom.auth: who may sign in. */
  get auth(): LoomConfig['auth'] {
    return this.options.config.auth;
  }

  /** The address a browser opens. */
  get url(): string {
    const configured = this.options.config.console.publicUrl;
    if (configured !== undefined) return configured.replace(/\/+$/, '');
    const host = this.options.config.console.host;
    const shown = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
    return `http://${shown}:${this.listening?.port ?? this.options.config.console.port ?? 0}`;
  }

  /** Listens on loom.console.host and loom.console.port; a port taken is a ListenError naming the key. */
  async listen(): Promise<number> {
    const { host, port = 0 } = this.options.config.console;
    await new Promise<void>((resolve, reject) => {
      const failed = (error: Error): void => reject(new ListenError({ host, port, portSetting: 'loom.console.port', hostSetting: 'loom.console.host' }, error));
      this.server.once('error', failed);
      this.server.listen(port, host, () => {
        this.server.off('error', failed);
        resolve();
      });
    });
    this.listening = this.server.address() as AddressInfo;
    this.lifecycle.to('running');
    if (!this.staticFiles.built) {
      this.options.logger.warn({ directory: this.staticFiles.directory }, "the console's pages are not built: the API answers, / says how to build them");
    }
    return this.listening.port;
  }

  /** Ends the event streams, closes every connection and the server, then the channels to loom. */
  async stop(): Promise<void> {
    if (!this.lifecycle.can('stopping')) return;
    this.lifecycle.to('stopping');
    for (const end of this.streams) end();
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeIdleConnections();
    for (const socket of this.sockets) socket.destroy();
    await closed;
    this.loom.close();
    this.lifecycle.to('stopped');
  }

  /** Registers an event stream's end, for stop; answers the function that unregisters it. */
  trackStream(end: () => void): () => void {
    this.streams.add(end);
    return () => this.streams.delete(end);
  }

  /** The Set-Cookie value that starts a session in this browser. */
  sessionCookie(session: Session): string {
    return `${sessionCookieName(this.secure)}=${session.id}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${this.sessions.maxAgeSeconds}${this.secure ? '; Secure' : ''}`;
  }

  /** The Set-Cookie value that ends it. */
  clearedSessionCookie(): string {
    return `${sessionCookieName(this.secure)}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0${this.secure ? '; Secure' : ''}`;
  }

  /** The session of a request's cookie, if it is live. */
  sessionOf(request: IncomingMessage): Session | undefined {
    return this.sessions.get(cookiesOf(request).get(sessionCookieName(this.secure)));
  }

  /** Drops the session when loom refused its token (revoked, expired): the browser goes back to sign-in. */
  forgetOnRefusal(session: Session, error: unknown): void {
    if (error instanceof ApiError && error.status === 401) this.sessions.delete(session.id);
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const method = request.method ?? 'GET';
    let url: URL;
    try {
      url = new URL(request.url ?? '/', 'http://console.invalid');
    } catch {
      sendError(response, new ApiError(400, 'the request address is not valid'));
      return;
    }
    const path = url.pathname;
    try {
      if (!path.startsWith('/api/') && !path.startsWith('/auth/') && path !== '/healthz') {
        this.serveStatic(request, response, method, path);
        return;
      }
      const { route, params } = this.router.match(method, path);
      const session = this.sessionOf(request);
      if (route.open !== true && session === undefined) throw new ApiError(401, 'not signed in, or the session has ended: sign in again');
      if (method !== 'GET' && method !== 'HEAD' && route.noCsrf !== true) {
        const presented = request.headers['x-csrf-token'];
        if (session === undefined || !csrfMatches(session, typeof presented === 'string' ? presented : undefined)) {
          throw new ApiError(403, 'missing or wrong X-CSRF-Token header: take it from GET /api/session');
        }
      }
      await route.handle({ request, response, params, query: url.searchParams, session });
    } catch (error) {
      this.answerError(request, response, error);
    }
  }

  private serveStatic(request: IncomingMessage, response: ServerResponse, method: string, path: string): void {
    if (method !== 'GET' && method !== 'HEAD') throw new MethodNotAllowedError(method, path, ['GET']);
    if (this.staticFiles.serve(request, response, path)) return;
    if (path === '/' || path === '/index.html') {
      htmlPage(response, 503, "loom's console is not built", 'Build its pages with <code>npm run build -w @loom/console</code> and restart loom.');
      return;
    }
    htmlPage(response, 404, 'Not found', `There is nothing at ${escapeHtml(path)}. <a href="/">Open the console</a>.`);
  }

  private answerError(request: IncomingMessage, response: ServerResponse, error: unknown): void {
    if (response.headersSent) {
      response.destroy();
      return;
    }
    const apiError =
      error instanceof ApiError
        ? error
        : new ApiError(500, 'the console failed to answer; its log says why', undefined, {
            cause: error,
          });
    if (!(error instanceof ApiError) || apiError.status >= 500) {
      this.options.logger.error({ err: error, method: request.method, path: request.url?.split('?')[0] }, 'console request failed');
    }
    // a 413 answers before the body was read: the connection is closed rather than reading the rest
    const headers: Record<string, string> = {};
    if (error instanceof MethodNotAllowedError) headers['allow'] = error.allowed.join(', ');
    if (apiError.status === 413) headers['connection'] = 'close';
    sendError(response, apiError, headers);
    if (apiError.status === 413) request.resume();
  }

  /** Sign-in with the identity provider: /auth/login sends the browser there, /auth/callback comes back with a code. */
  private authRoutes(): Route[] {
    return [
      {
        method: 'GET',
        path: '/healthz',
        open: true,
        handle: ({ response }) => {
          response.writeHead(200, { ...SECURITY_HEADERS, 'content-type': 'text/plain', 'cache-control': 'no-store' }).end('ok\n');
        },
      },
      {
        method: 'GET',
        path: '/auth/login',
        open: true,
        handle: ({ response }) => {
          if (this.oidc === undefined) throw new ApiError(404, 'sign-in with an identity provider is not configured (loom.auth.oidc.configFile)');
          const { location, state } = this.oidc.start();
          // Lax, not Strict: the provider's redirect back is a cross-site navigation, which must carry it
          const cookie = `${LOGIN_COOKIE}=${state}; Path=/auth/callback; HttpOnly; SameSite=Lax; Max-Age=600${this.secure ? '; Secure' : ''}`;
          response.writeHead(302, { ...SECURITY_HEADERS, location, 'set-cookie': cookie, 'cache-control': 'no-store' }).end();
        },
      },
      {
        method: 'GET',
        path: '/auth/callback',
        open: true,
        handle: async ({ request, response, query }) => {
          const clearLogin = `${LOGIN_COOKIE}=; Path=/auth/callback; HttpOnly; SameSite=Lax; Max-Age=0${this.secure ? '; Secure' : ''}`;
          try {
            if (this.oidc === undefined) throw new ApiError(404, 'sign-in with an identity provider is not configured (loom.auth.oidc.configFile)');
            const token = await this.oidc.finish(query, cookiesOf(request).get(LOGIN_COOKIE));
            const session = this.sessions.create(await this.tokens.owner(token));
            this.options.logger.info({ identity: session.identity, via: 'identity provider' }, 'console sign-in');
            response
              .writeHead(302, { ...SECURITY_HEADERS, location: '/', 'set-cookie': [this.sessionCookie(session), clearLogin], 'cache-control': 'no-store' })
              .end();
          } catch (error) {
            const failure = error instanceof ApiError ? error : new ApiError(502, 'the sign-in failed; the console log says why', undefined, { cause: error });
            if (!(error instanceof ApiError)) this.options.logger.error({ err: error }, 'console sign-in failed');
            htmlPage(response, failure.status, 'Sign-in failed', `${escapeHtml(failure.message)}. <a href="/">Back to sign-in</a>.`, {
              'set-cookie': clearLogin,
            });
          }
        },
      },
    ];
  }
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** A small page without script, for a browser that navigated here (the sign-in's callback, an unknown address). */
function htmlPage(response: ServerResponse, status: number, title: string, bodyHtml: string, headers: Readonly<Record<string, string>> = {}): void {
  const text = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)} · loom</title></head><body><main><h1>${escapeHtml(title)}</h1><p>${bodyHtml}</p></main></body></html>`;
  response.writeHead(status, { ...SECURITY_HEADERS, 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', ...headers }).end(text);
}

/** Starts the console on loom.console.port (which must be set) and resolves once it listens. */
export async function startConsole(options: ConsoleOptions): Promise<RunningConsole> {
  const server = new ConsoleServer(options);
  let port: number;
  try {
    port = await server.listen();
  } catch (error) {
    await server.stop();
    throw error;
  }
  options.logger.info({ url: server.url, port }, 'console listening');
  return { port, url: server.url, stop: () => server.stop() };
}
