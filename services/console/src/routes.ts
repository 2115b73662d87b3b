import { type IncomingMessage, type ServerResponse } from 'node:http';
import { ApiError } from './http-errors.js';
import { type Session } from './sessions.js';

/** What a route's handler gets. */
export interface RouteContext {
  readonly request: IncomingMessage;
  readonly response: ServerResponse;
  /** The path's parameters, decoded (`{name}`). */
  readonly params: Readonly<Record<string, string>>;
  readonly query: URLSearchParams;
  /** The signed-in session; routes marked `open` may run without one. */
  readonly session: Session | undefined;
}

/** One route of the console's HTTP API. */
export interface Route {
  readonly method: 'GET' | 'POST' | 'DELETE';
  /** `/api/workflows/{name}/events`: a `{x}` matches one path segment. */
  readonly path: string;
  /** Runs without a session (sign-in, the identity provider's callback, health). */
  readonly open?: boolean;
  /** A state-changing route that needs no CSRF token (only the sign-in, which has no session yet). */
  readonly noCsrf?: boolean;
  handle(context: RouteContext): Promise<void> | void;
}

interface CompiledRoute {
  readonly route: Route;
  readonly pattern: RegExp;
  readonly names: readonly string[];
}

/** The routes, matched by method and path; a path with routes for other methods only is 405. */
export class Router {
  private readonly compiled: CompiledRoute[];

  constructor(routes: readonly Route[]) {
    this.compiled = routes.map((route) => {
      const names: string[] = [];
      const source = route.path
        .split('/')
        .map((part) => {
          const name = /^\{(\w+)\}$/.exec(part)?.[1];
          if (name === undefined) return part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
          names.push(name);
          return '([^/]+)';
        })
        .join('/');
      return { route, pattern: new RegExp(`^${source}$`), names };
    });
  }

  /** The route for a request and its parameters; ApiError 404 or 405 (with the methods allowed) when none fits. */
  match(method: string, path: string): { route: Route; params: Record<string, string> } {
    const allowed = new Set<string>();
    for (const { route, pattern, names } of this.compiled) {
      const found = pattern.exec(path);
      if (found === null) continue;
      if (route.method !== method && !(method === 'HEAD' && route.method === 'GET')) {
        allowed.add(route.method);
        continue;
      }
      const params: Record<string, string> = {};
      names.forEach((name, index) => {
        try {
          params[name] = decodeURIComponent(found[index + 1] as string);
        } catch {
          throw new ApiError(400, `the path's ${name} is not valid percent-encoding`, name);
        }
      });
      return { route, params };
    }
    if (allowed.size > 0) throw new MethodNotAllowedError(method, path, [...allowed]);
    throw new ApiError(404, `no such address: ${path}`);
  }
}

/** 405, with the methods the path takes (for the Allow header). */
export class MethodNotAllowedError extends ApiError {
  constructor(
    method: string,
    path: string,
    readonly allowed: readonly string[],
  ) {
    super(405, `${path} does not take ${method}; it takes ${allowed.join(', ')}`);
    this.name = 'MethodNotAllowedError';
  }
}
