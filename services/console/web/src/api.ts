// The console's one way to the backend (services/console/openapi.yaml): JSON over fetch with the session cookie, the
// CSRF token on every state-changing request, and every error answer turned into an ApiError the pages show in place.

/** An error answer of the backend, `{error:{status,message,field?}}`, or a network failure (status 0). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly field?: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** Who is signed in, what they may do, and the token their state-changing requests carry. */
export interface Session {
  readonly identity: string;
  readonly roles: readonly string[];
  readonly permissions: readonly string[];
  readonly csrfToken: string;
}

/** Called when the backend answers 401: the session is gone or was never there, and the page goes back to sign-in. */
let onSignedOut: () => void = () => undefined;
let csrfToken = '';

/** Sets what happens when a request finds no session (the app shows the sign-in page). */
export function whenSignedOut(handler: () => void): void {
  onSignedOut = handler;
}

async function errorOf(response: Response): Promise<ApiError> {
  const text = await response.text().catch(() => '');
  try {
    const body = JSON.parse(text) as { error?: { status?: number; message?: string; field?: string } };
    if (body.error?.message !== undefined) return new ApiError(body.error.status ?? response.status, body.error.message, body.error.field);
  } catch {
    // not JSON: a proxy's or the server's plain answer, shown by its status below
  }
  return new ApiError(response.status, `${response.status} ${response.statusText || 'error'}`.trim());
}

/** Sends one request; answers the parsed JSON body (undefined for 204), or throws an ApiError. */
export async function request<T>(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (method !== 'GET') headers['X-CSRF-Token'] = csrfToken;
  let response: Response;
  try {
    response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: 'same-origin',
    });
  } catch (cause) {
    throw new ApiError(0, `loom's console cannot be reached (${cause instanceof Error ? cause.message : String(cause)})`);
  }
  if (!response.ok) {
    const error = await errorOf(response);
    // signing in with a bad token answers 401 too; that is an error on the sign-in page, not a lost session
    if (response.status === 401 && path !== '/api/session') onSignedOut();
    throw error;
  }
  if (response.status === 204) return undefined as T;
  return (await response.json()) as T;
}

/** The session of this browser, or undefined when none (401). */
export async function currentSession(): Promise<Session | undefined> {
  try {
    const session = await request<Session>('GET', '/api/session');
    csrfToken = session.csrfToken;
    return session;
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return undefined;
    throw error;
  }
}

/** Signs in with an operator token (it goes in the request's body, never in a URL or the browser's storage). */
export async function signInWithToken(token: string): Promise<Session> {
  await request<void>('POST', '/api/session', { token });
  const session = await currentSession();
  if (session === undefined) throw new ApiError(401, 'the session was not kept: are cookies allowed for this address?');
  return session;
}

/** Signs in without a token, where loom takes calls without one (loom.auth.allowAnonymous: the development config). */
export async function signInAnonymously(): Promise<Session> {
  await request<void>('POST', '/api/session', { anonymous: true });
  const session = await currentSession();
  if (session === undefined) throw new ApiError(401, 'the session was not kept: are cookies allowed for this address?');
  return session;
}

/** What the sign-in page may offer besides a token. */
export function signInOptions(): Promise<{ readonly identityProvider: boolean; readonly anonymous: boolean }> {
  return request('GET', '/api/sign-in');
}

/** Ends the session on the server. */
export async function signOut(): Promise<void> {
  await request<void>('DELETE', '/api/session');
  csrfToken = '';
}

/** Whether the session holds a permission of loom's table ('operate', 'administer', 'read-message-content', ...). */
export function may(session: Session, permission: string): boolean {
  return session.permissions.includes(permission);
}

/** The ApiError of an `error` event the server sent on an event stream; undefined for the browser's own error events. */
export function streamError(event: Event): ApiError | undefined {
  if (!(event instanceof MessageEvent) || typeof event.data !== 'string') return undefined;
  try {
    const body = JSON.parse(event.data) as { error?: { status?: number; message?: string } };
    return body.error?.message === undefined ? undefined : new ApiError(body.error.status ?? 0, body.error.message);
  } catch {
    return undefined;
  }
}

/** A path segment, escaped. */
export function segment(value: string): string {
  return encodeURIComponent(value);
}

/** A query string of the values that are set. */
export function query(values: Record<string, string | undefined>): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(values)) if (value !== undefined && value !== '') params.set(name, value);
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}
