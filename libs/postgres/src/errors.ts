import { LoomError, UnavailableError } from '@loom/domain';

/** The database cannot be reached or dropped the connection; the message names host, port and database, never credentials. */
export class DatabaseUnavailableError extends UnavailableError {
  constructor(
    readonly address: string,
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(`database ${address} is unavailable: ${reason}`, options);
  }
}

/** The embedded PostgreSQL was asked to listen on a non-loopback address; it has no authentication, so it never does. */
export class NonLoopbackHostError extends LoomError {
  readonly kind = 'invalid-argument';

  constructor(readonly host: string) {
    super(`the embedded PostgreSQL listens on loopback only (127.0.0.1, ::1 or localhost), not on '${host}': it has no authentication`);
  }
}

/** Another embedded PostgreSQL (in this process or another) already owns the data directory. */
export class DataDirectoryInUseError extends LoomError {
  readonly kind = 'failed-precondition';

  constructor(
    readonly dataDir: string,
    readonly ownerPid: number | undefined,
  ) {
    super(
      `embedded PostgreSQL data directory ${dataDir} is in use by ${ownerPid === undefined ? 'another owner' : `process ${ownerPid}`}; ` +
        'only one process can open it (stop that process, or remove its loom.lock file if that process is gone)',
    );
  }
}

/** The embedded PostgreSQL could not start: its port is taken, or its data directory cannot be opened. */
export class EmbeddedPostgresStartError extends LoomError {
  readonly kind = 'unavailable';

  constructor(
    readonly dataDir: string,
    /** What went wrong, without the directory: `cannot listen on 127.0.0.1:5432: …`. */
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(`embedded PostgreSQL on ${dataDir} could not start: ${reason}`, options);
  }
}

/** A component's migration list is malformed (versions not positive, unique and strictly increasing, or a name missing). */
export class InvalidMigrationsError extends LoomError {
  readonly kind = 'invalid-argument';

  constructor(
    readonly component: string,
    readonly problem: string,
  ) {
    super(`migrations of '${component}': ${problem}`);
  }
}

/** The recorded migration history disagrees with the code (an applied version was renamed, or a new one predates an applied one). */
export class MigrationHistoryError extends LoomError {
  readonly kind = 'failed-precondition';

  constructor(
    readonly component: string,
    readonly version: number,
    problem: string,
  ) {
    super(`migration ${version} of '${component}': ${problem}`);
  }
}

/** A migration's SQL failed; nothing of it was applied (it ran in one transaction with its bookkeeping row). */
export class MigrationFailedError extends LoomError {
  readonly kind = 'failed-precondition';

  constructor(
    readonly component: string,
    readonly version: number,
    readonly migrationName: string,
    reason: string,
    options?: { cause?: unknown },
  ) {
    super(`migration ${version} ('${migrationName}') of '${component}' failed: ${reason}`, options);
  }
}

/** Opening a component's database failed for a reason no more specific error names (e.g. no right to create public.loom_schema_migrations). */
export class DatabaseOpenError extends LoomError {
  readonly kind = 'failed-precondition';

  constructor(
    readonly component: string,
    readonly address: string,
    reason: string,
    options?: { cause?: unknown },
  ) {
    super(`database ${address} of '${component}' could not be opened: ${reason}`, options);
  }
}
