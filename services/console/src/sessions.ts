import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** Who a console session belongs to, and the bearer token its calls to loom carry (never sent to the browser). */
export interface SessionOwner {
  readonly identity: string;
  readonly roles: readonly string[];
  readonly permissions: readonly string[];
  /** The operator token or the identity provider's access token. */
  readonly token: string;
  /** When the token itself stops being valid (an access token's `exp`), in ms since the epoch. */
  readonly tokenExpiresAt?: number;
}

/** A signed-in browser. */
export interface Session extends SessionOwner {
  /** The cookie's value is this id; the store keys sessions by its hash, so a dump of the store signs nobody in. */
  readonly id: string;
  /** Sent with every state-changing request in X-CSRF-Token. */
  readonly csrfToken: string;
  readonly createdAt: number;
  lastUsedAt: number;
}

/** How long sessions live. */
export interface SessionTimes {
  /** A session unused this long ends. */
  readonly idleTimeoutMs: number;
  /** A session ends this long after sign-in. */
  readonly maxAgeMs: number;
  /** The clock (tests move it). */
  readonly now?: () => number;
}

/** Sessions kept at most; the least recently used goes first past it (a flood of sign-ins cannot grow memory without end). */
export const MAX_SESSIONS = 10_000;

function hashOf(id: string): string {
  return createHash('sha256').update(id).digest('hex');
}

/** Server-side sessions in this process's memory: random ids, idle and absolute timeouts, one CSRF token each. */
export class SessionStore {
  private readonly sessions = new Map<string, Session>();
  private readonly now: () => number;

  constructor(private readonly times: SessionTimes) {
    this.now = times.now ?? Date.now;
  }

  /** Starts a session for the owner; the answer's id goes into the cookie. */
  create(owner: SessionOwner): Session {
    const now = this.now();
    const session: Session = {
      ...owner,
      id: randomBytes(32).toString('base64url'),
      csrfToken: randomBytes(32).toString('base64url'),
      createdAt: now,
      lastUsedAt: now,
    };
    this.sweep(now);
    if (this.sessions.size >= MAX_SESSIONS) {
      const oldest = this.sessions.keys().next().value;
      if (oldest !== undefined) this.sessions.delete(oldest);
    }
    this.sessions.set(hashOf(session.id), session);
    return session;
  }

  /** The live session of a cookie value, marked used; undefined when unknown, idle too long, too old or its token expired. */
  get(id: string | undefined): Session | undefined {
    if (id === undefined || id === '') return undefined;
    const key = hashOf(id);
    const session = this.sessions.get(key);
    if (session === undefined) return undefined;
    const now = this.now();
    if (this.expired(session, now)) {
      this.sessions.delete(key);
      return undefined;
    }
    session.lastUsedAt = now;
    // most recently used last, so that the first entry is the one to drop when the store is full
    this.sessions.delete(key);
    this.sessions.set(key, session);
    return session;
  }

  /** Ends a session (sign-out, or its token refused by loom). */
  delete(id: string): void {
    this.sessions.delete(hashOf(id));
  }

  /** How many sessions are held. */
  get size(): number {
    return this.sessions.size;
  }

  /** The seconds a new session's cookie may live. */
  get maxAgeSeconds(): number {
    return Math.floor(this.times.maxAgeMs / 1000);
  }

  private expired(session: Session, now: number): boolean {
    return (
      now - session.lastUsedAt > this.times.idleTimeoutMs ||
      now - session.createdAt > this.times.maxAgeMs ||
      (session.tokenExpiresAt !== undefined && now >= session.tokenExpiresAt)
    );
  }

  private sweep(now: number): void {
    for (const [key, session] of this.sessions) if (this.expired(session, now)) this.sessions.delete(key);
  }
}

/** Whether the CSRF token a request presents is the session's (compared in constant time). */
export function csrfMatches(session: Session, presented: string | undefined): boolean {
  if (presented === undefined) return false;
  const expected = Buffer.from(session.csrfToken);
  const given = Buffer.from(presented);
  return expected.length === given.length && timingSafeEqual(expected, given);
}
