import { type ErrorKind, LoomError } from '@loom/domain';

/**
 * Base of the messaging failures: the kind the service kit maps to a gRPC status. Whether a retry may succeed is the
 * kind's (LoomError.retryable): a full stream or NATS away is worth another try (with the same message id, a publish
 * is stored once), a refusal is not.
 */
export abstract class MessagingError extends LoomError {}

/** A workflow's stream holds all it may (loom.messaging.stream.maxBytes): the publish was refused, nothing stored or dropped. */
export class StreamFullError extends MessagingError {
  readonly kind: ErrorKind = 'resource-exhausted';

  constructor(
    readonly workflow: string,
    /** JetStream's words: `maximum bytes exceeded`, `maximum messages exceeded`. */
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(`the message stream of workflow '${workflow}' is full (${reason}): try again once the workflow has caught up`, options);
  }
}

/** The NATS servers cannot be reached, or did not answer in time; the message may or may not have been stored. */
export class MessagingUnavailableError extends MessagingError {
  readonly kind: ErrorKind = 'unavailable';

  constructor(
    /** What was being done (`publish to workflow 'etl'`). */
    readonly operation: string,
    reason: string,
    options?: { cause?: unknown },
  ) {
    super(`${operation}: NATS is unavailable (${reason})`, options);
  }
}

/** The NATS servers refused loom's credentials (token, .creds or client certificate): a configuration problem. */
export class MessagingAuthenticationError extends MessagingError {
  readonly kind: ErrorKind = 'failed-precondition';

  constructor(reason: string, options?: { cause?: unknown }) {
    super(`NATS refused loom's credentials (${reason}): check loom.messaging.nats.token, .credentials and .tls.*`, options);
  }
}

/** A workflow or one of its sources has no stream to take its messages: its stream was never created, or was deleted. */
export class StreamNotFoundError extends MessagingError {
  readonly kind: ErrorKind = 'failed-precondition';

  constructor(
    readonly workflow: string,
    readonly source: string | undefined,
    options?: { cause?: unknown },
  ) {
    super(
      source === undefined
        ? `workflow '${workflow}' has no message stream`
        : `source '${source}' of workflow '${workflow}' has no message stream (the workflow's stream is missing or has no subject for it)`,
      options,
    );
  }
}

/** JetStream refused a request for a reason a retry does not change (a conflicting stream configuration, a limit). */
export class JetStreamRequestError extends MessagingError {
  readonly kind: ErrorKind = 'failed-precondition';

  constructor(
    readonly operation: string,
    /** JetStream's error code (`10058`), when it gave one. */
    readonly code: number | undefined,
    reason: string,
    options?: { cause?: unknown },
  ) {
    super(`${operation}: JetStream refused it (${code === undefined ? '' : `${code}: `}${reason})`, options);
  }
}

/** The messaging connection (or a consumer) was closed; a programming error in the caller. */
export class MessagingClosedError extends MessagingError {
  readonly kind: ErrorKind = 'failed-precondition';

  constructor(readonly operation: string) {
    super(`${operation}: the messaging connection is closed`);
  }
}

/** The JetStream stream that takes a subject a NATS connector publishes to holds all it may: refused, nothing stored. */
export class SubjectStreamFullError extends MessagingError {
  readonly kind: ErrorKind = 'resource-exhausted';

  constructor(
    readonly subject: string,
    /** JetStream's words: `maximum bytes exceeded`, `maximum messages exceeded`. */
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(`the JetStream stream of subject '${subject}' is full (${reason}): try again once its consumers have caught up`, options);
  }
}

/** A replay was asked of a workflow whose processed messages are not kept (loom.messaging.stream.keepProcessedMs is 0, or never was set where it ran). */
export class NothingKeptError extends MessagingError {
  readonly kind: ErrorKind = 'failed-precondition';

  constructor(
    readonly workflow: string,
    reason: string,
  ) {
    super(`workflow '${workflow}' keeps no processed messages to replay: ${reason}`);
  }
}

/** A replay would start before the oldest message still kept (past loom.messaging.stream.keepProcessedMs), or after the last. */
export class ReplayOutOfRangeError extends MessagingError {
  readonly kind: ErrorKind = 'failed-precondition';

  constructor(
    readonly workflow: string,
    reason: string,
  ) {
    super(`workflow '${workflow}': ${reason}; nothing was replayed`);
  }
}
