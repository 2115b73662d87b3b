import { createHash } from 'node:crypto';
import { parseDatabaseUrl, redactPassword } from '@loom/postgres';
import { type Logger } from '@loom/telemetry';
import pg from 'pg';

/** Who acts: exactly one scheduler at a time calls the executor. */
export interface Leadership {
  /** This scheduler's identity, as lease_holder shows it. */
  readonly identity: string;
  readonly isLeader: boolean;
  /** The identity of the current leader, as far as this scheduler knows ('' when none). */
  holder(): Promise<string>;
  /** Begins taking part; `onAcquired` and `onLost` are called as leadership comes and goes. */
  start(onAcquired: () => void, onLost: (reason: string) => void): void;
  close(): Promise<void>;
}

/** A scheduler alone (no database configured): it leads from the start. */
export class LocalLeadership implements Leadership {
  isLeader = false;

  constructor(readonly identity: string) {}

  holder(): Promise<string> {
    return Promise.resolve(this.identity);
  }

  start(onAcquired: () => void): void {
    this.isLeader = true;
    onAcquired();
  }

  close(): Promise<void> {
    this.isLeader = false;
    return Promise.resolve();
  }
}

// first key of every advisory lock loom takes: 'loom' in ASCII (libs/postgres uses it for migrations)
const LOCK_NAMESPACE = 0x6c6f6f6d;
/** Second key of the lease: 32 bits of SHA-256 of its name, apart from the migration lock of component 'scheduler'. */
export const LEASE_LOCK_KEY = createHash('sha256').update('scheduler.lease').digest().readInt32BE(0);

/** How PostgresLeadership reaches the database and how often it looks. */
export interface PostgresLeadershipOptions {
  readonly url: string;
  readonly identity: string;
  /** How often a standby tries the lock and the leader checks its session. */
  readonly pollMs: number;
  /** A leader that cannot confirm its session for this long steps down; also the session's idle_session_timeout. */
  readonly timeoutMs: number;
  readonly logger: Logger;
  /** Reads the lease row (the pool of the state store). */
  readonly query: (text: string, params?: unknown[]) => Promise<pg.QueryResult>;
}

/**
 * Leadership through a PostgreSQL session-level advisory lock (pg_try_advisory_lock) held on a connection of its own.
 * The lock lives as long as that session: when the leader dies, its connection closes, the server ends the session
 * and the lock is free; a standby polling every `pollMs` takes it on its next try. A leader whose session fails, or
 * whose check does not answer within `timeoutMs`, steps down at once. The session runs with idle_session_timeout =
 * `timeoutMs`, so the server also frees the lock of a leader that stopped polling (a frozen process) within that time.
 */
export class PostgresLeadership implements Leadership {
  private session: pg.Client | undefined;
  private leading = false;
  private closed = false;
  private timer: NodeJS.Timeout | undefined;
  private knownHolder = '';
  /** A scheduler that lost the lease sits out a lease timeout, so a standby takes over rather than it flapping back. */
  private stepDownUntil = 0;
  private onAcquired: () => void = () => undefined;
  private onLost: (reason: string) => void = () => undefined;

  constructor(private readonly options: PostgresLeadershipOptions) {}

  get identity(): string {
    return this.options.identity;
  }

  get isLeader(): boolean {
    return this.leading;
  }

  async holder(): Promise<string> {
    if (this.leading) return this.identity;
    try {
      const { rows } = await this.options.query('SELECT holder FROM public.scheduler_lease WHERE id = 1');
      this.knownHolder = (rows[0] as { holder?: string } | undefined)?.holder ?? '';
    } catch {
      // the last known holder is the best answer while the database does not answer
    }
    return this.knownHolder;
  }

  start(onAcquired: () => void, onLost: (reason: string) => void): void {
    this.onAcquired = onAcquired;
    this.onLost = onLost;
    this.schedule(0);
  }

  private schedule(delayMs: number): void {
    if (this.closed) return;
    this.timer = setTimeout(() => void this.tick(), delayMs);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    try {
      if (this.leading) await this.confirm();
      else if (this.stepDownUntil <= Date.now()) await this.tryAcquire();
    } catch (error) {
      this.dropSession(error instanceof Error ? error.message : String(error));
    }
    this.schedule(this.stepDownUntil > Date.now() ? this.stepDownUntil - Date.now() : this.options.pollMs);
  }

  private async connect(): Promise<pg.Client> {
    if (this.session !== undefined) return this.session;
    const session = new pg.Client({
      connectionString: this.options.url,
      application_name: `loom-scheduler-lease ${this.identity}`.slice(0, 63),
      keepAlive: true,
      connectionTimeoutMillis: this.options.timeoutMs,
      // bounds every query of the session, so a check that hangs (a dead network path) ends the leadership in time
      query_timeout: this.options.timeoutMs,
    });
    session.on('error', (error: Error) => this.dropSession(`lease session failed: ${error.message}`));
    session.on('end', () => {
      if (this.session === session) this.dropSession('lease session ended');
    });
    this.session = session;
    await session.connect();
    await session.query(`SET idle_session_timeout = ${Math.round(this.options.timeoutMs)}`);
    return session;
  }

  private async tryAcquire(): Promise<void> {
    const session = await this.connect();
    const { rows } = await session.query<{ acquired: boolean }>('SELECT pg_try_advisory_lock($1, $2) AS acquired', [LOCK_NAMESPACE, LEASE_LOCK_KEY]);
    if (rows[0]?.acquired !== true || this.closed) return;
    await session.query(
      `INSERT INTO public.scheduler_lease (id, holder, acquired_at) VALUES (1, $1, now())
       ON CONFLICT (id) DO UPDATE SET holder = EXCLUDED.holder, acquired_at = EXCLUDED.acquired_at`,
      [this.identity],
    );
    this.leading = true;
    this.knownHolder = this.identity;
    this.options.logger.info({ identity: this.identity, pollMs: this.options.pollMs }, 'scheduler lease acquired: this scheduler leads');
    this.onAcquired();
  }

  private async confirm(): Promise<void> {
    const session = this.session;
    if (session === undefined) this.dropSession('lease session gone');
    else await session.query('SELECT 1');
  }

  /** Forgets the session (its lock goes with it) and steps down if leading. */
  private dropSession(why: string): void {
    const reason = redactPassword(why, parseDatabaseUrl(this.options.url).password);
    const session = this.session;
    this.session = undefined;
    session?.removeAllListeners('end');
    session?.end().catch(() => undefined);
    if (this.leading) {
      this.leading = false;
      this.stepDownUntil = Date.now() + this.options.timeoutMs;
      this.options.logger.warn({ identity: this.identity, reason }, 'scheduler lease lost: this scheduler stops acting');
      this.onLost(reason);
    } else if (!this.closed && reason !== '') {
      this.options.logger.debug({ reason }, 'scheduler lease not available');
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    const session = this.session;
    this.session = undefined;
    const wasLeading = this.leading;
    this.leading = false;
    if (session !== undefined) {
      session.removeAllListeners('end');
      // ending the session releases the lock; a standby takes over on its next poll
      await session.end().catch(() => undefined);
    }
    if (wasLeading) this.options.logger.info({ identity: this.identity }, 'scheduler lease released');
  }
}
