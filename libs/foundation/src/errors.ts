/** What a caller can do about a failure; the service kit maps each kind to one gRPC status. */
export type ErrorKind =
  | 'invalid-argument'
  | 'not-found'
  | 'already-exists'
  | 'failed-precondition'
  | 'aborted'
  | 'permission-denied'
  | 'unauthenticated'
  | 'resource-exhausted'
  | 'unavailable'
  | 'deadline-exceeded'
  | 'unimplemented';

/** The kinds whose failures are transient: the same call may succeed later (a dependency back, room again, a race lost). */
const RETRYABLE_KINDS: ReadonlySet<ErrorKind> = new Set<ErrorKind>(['unavailable', 'resource-exhausted', 'aborted']);

/** How a LoomError is made: the error behind it, and whether a retry may succeed when its kind's default is wrong for it. */
export interface LoomErrorOptions {
  readonly cause?: unknown;
  /** Overrides the kind's default (`unavailable`, `resource-exhausted` and `aborted` are retryable, the rest not). */
  readonly retryable?: boolean;
}

/** Base of every error loom reports to a caller; its message is safe to show them. */
export abstract class LoomError extends Error {
  abstract readonly kind: ErrorKind;
  // a private field, not an own enumerable property: errors compared or serialised field by field stay as they were
  readonly #retryable: boolean | undefined;

  constructor(message: string, options?: LoomErrorOptions) {
    // Error reads only `cause` from the options, and makes the property only when it is given
    super(message, options);
    this.name = new.target.name;
    this.#retryable = options?.retryable;
  }

  /** True when the same call may succeed if made again later: the kind's default unless the error was made with its own answer. */
  get retryable(): boolean {
    // a getter, because `kind` is a field of the subclass and is not set yet while this constructor runs
    return this.#retryable ?? RETRYABLE_KINDS.has(this.kind);
  }
}

/** One wrong field of a request, named by its JSON path (`components[2].options[0].value`). */
export interface FieldViolation {
  readonly field: string;
  readonly description: string;
  readonly reason?: string;
}

/** Most violations a ValidationError's message lists; the error (and a status's google.rpc.BadRequest) keeps them all. */
export const MAX_VIOLATIONS_IN_MESSAGE = 20;

/** A request or document is invalid; carries one violation per wrong field, its message listing them (the first MAX_VIOLATIONS_IN_MESSAGE). */
export class ValidationError extends LoomError {
  readonly kind = 'invalid-argument';

  constructor(
    readonly violations: readonly FieldViolation[],
    options?: LoomErrorOptions,
  ) {
    super(ValidationError.summarise(violations), options);
  }

  /** A validation error for a single field. */
  static of(field: string, description: string, reason?: string): ValidationError {
    return new ValidationError([reason === undefined ? { field, description } : { field, description, reason }]);
  }

  private static summarise(violations: readonly FieldViolation[]): string {
    if (violations.length === 0) return 'invalid request';
    const shown = violations.slice(0, MAX_VIOLATIONS_IN_MESSAGE).map((v) => (v.field === '' ? v.description : `${v.field}: ${v.description}`));
    const more = violations.length - shown.length;
    return shown.join('; ') + (more > 0 ? ` (and ${more} more, every one in the error's field violations)` : '');
  }
}

/** A failure about one named thing (a workflow, a variable, a skill): what kind of thing it is, and its name. */
abstract class NamedThingError extends LoomError {
  constructor(
    readonly what: string,
    readonly id: string,
    condition: string,
  ) {
    super(`${what} '${id}' ${condition}`);
  }
}

/** A named thing (workflow, variable, skill...) does not exist. */
export class NotFoundError extends NamedThingError {
  readonly kind = 'not-found';

  constructor(what: string, id: string) {
    super(what, id, 'not found');
  }
}

/** A named thing already exists where a new one was to be created. */
export class AlreadyExistsError extends NamedThingError {
  readonly kind = 'already-exists';

  constructor(what: string, id: string) {
    super(what, id, 'already exists');
  }
}

/** The system is not in a state that allows the operation (a disabled component, a bad ciphertext). */
export class FailedPreconditionError extends LoomError {
  readonly kind = 'failed-precondition';
}

/** A concurrent change won (optimistic concurrency). */
export class ConflictError extends LoomError {
  readonly kind = 'aborted';
}

/** The caller is known but may not do this. */
export class PermissionDeniedError extends LoomError {
  readonly kind = 'permission-denied';
}

/** The caller presented no valid credentials. */
export class UnauthenticatedError extends LoomError {
  readonly kind = 'unauthenticated';
}

/** A capability a later part of loom provides is not built yet. */
export class NotImplementedError extends LoomError {
  readonly kind = 'unimplemented';

  constructor(readonly capability: string) {
    super(`not implemented yet: ${capability}`);
  }
}

/** A dependency (another service, a skill, a database) cannot be reached right now. */
export class UnavailableError extends LoomError {
  readonly kind = 'unavailable';
}

/** A bounded resource (a queue, a rate) is full; retry later. */
export class ResourceExhaustedError extends LoomError {
  readonly kind = 'resource-exhausted';
}
