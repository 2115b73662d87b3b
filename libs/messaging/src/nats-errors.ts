import { ErrorCode, NatsError } from 'nats';
import {
  JetStreamRequestError,
  MessagingAuthenticationError,
  MessagingClosedError,
  MessagingError,
  MessagingUnavailableError,
  StreamFullError,
  StreamNotFoundError,
  SubjectStreamFullError,
} from './errors.js';

/** JetStream's error codes this library acts on. */
export const JetStreamCode = {
  /** A stream of that name exists with another configuration. */
  streamNameInUse: 10058,
  streamNotFound: 10059,
  /** A store failed; with DiscardNew a full stream answers it (`maximum bytes exceeded`). */
  streamStoreFailed: 10077,
  consumerNotFound: 10014,
  /** A durable consumer of that name exists with another configuration. */
  consumerExists: 10148,
  /** A write that named a last revision (a key-value create or update) found another. */
  wrongLastSequence: 10071,
} as const;

const UNAVAILABLE = new Set<string>([
  ErrorCode.ConnectionRefused,
  ErrorCode.ConnectionTimeout,
  ErrorCode.Disconnect,
  ErrorCode.Timeout,
  ErrorCode.RequestError,
  ErrorCode.JetStream408RequestTimeout,
]);
const AUTHENTICATION = new Set<string>([
  ErrorCode.AuthorizationViolation,
  ErrorCode.AuthenticationExpired,
  ErrorCode.AuthenticationTimeout,
  ErrorCode.BadAuthentication,
  ErrorCode.BadCreds,
  ErrorCode.AccountExpired,
  ErrorCode.PermissionsViolation,
  ErrorCode.Tls,
]);
const CLOSED = new Set<string>([ErrorCode.ConnectionClosed, ErrorCode.ConnectionDraining]);
const FULL = /^maximum (bytes|messages|messages per subject) exceeded$/;

/** Whether JetStream's answer to a publish (its error code and description) says the stream is full (DiscardNew past its limits). */
export function isFullAnswer(code: number | undefined, description: string): boolean {
  return code === JetStreamCode.streamStoreFailed && FULL.test(description);
}

/** Whether a failure is NATS' "no responders": nobody took the request or the publish. */
export function isNoResponders(error: unknown): boolean {
  const noResponders: string = ErrorCode.NoResponders;
  return error instanceof NatsError && error.code === noResponders;
}

/** The JetStream error code of a NATS error, when JetStream gave one. */
export function jetStreamCode(error: unknown): number | undefined {
  return error instanceof NatsError ? error.api_error?.err_code : undefined;
}

/**
 * Whether a key-value bucket refused a create or an update because the key's revision is not the one named: the key
 * holds a value (a create), or another wrote it since (an update).
 */
export function isWrongLastSequence(error: unknown): boolean {
  // the client's create answers with its own error carrying JetStream's words
  return jetStreamCode(error) === JetStreamCode.wrongLastSequence || (error instanceof Error && error.message.includes('wrong last sequence'));
}

/** What the caller is doing, for the typed error: the operation's words and, where it has them, workflow and source. */
export interface Operation {
  readonly what: string;
  readonly workflow?: string;
  readonly source?: string;
  /** The subject a NATS connector publishes to (not one of loom's own sources). */
  readonly subject?: string;
}

/**
 * A failure of the NATS client as one of the typed messaging errors (the client's own error kept as the cause). NATS'
 * messages never carry a token or a credential, and only the client's code and JetStream's description are used.
 */
export function messagingError(operation: Operation, error: unknown): MessagingError {
  if (error instanceof MessagingError) return error;
  const cause = { cause: error };
  if (!(error instanceof NatsError)) {
    return new MessagingUnavailableError(operation.what, error instanceof Error ? error.message : String(error), cause);
  }
  const api = error.api_error;
  if (api?.err_code !== undefined) {
    const description = api.description;
    if (isFullAnswer(api.err_code, description) && operation.workflow !== undefined) {
      return new StreamFullError(operation.workflow, description, cause);
    }
    if (isFullAnswer(api.err_code, description) && operation.subject !== undefined) {
      return new SubjectStreamFullError(operation.subject, description, cause);
    }
    if (api.err_code === JetStreamCode.streamNotFound && operation.workflow !== undefined) {
      return new StreamNotFoundError(operation.workflow, operation.source, cause);
    }
    return new JetStreamRequestError(operation.what, api.err_code, description, cause);
  }
  // a publish no stream listens to: JetStream has no subject for it (a request to JetStream's API: JetStream is off)
  if (isNoResponders(error) && operation.source !== undefined && operation.workflow !== undefined) {
    return new StreamNotFoundError(operation.workflow, operation.source, cause);
  }
  if (isNoResponders(error) && operation.subject !== undefined) {
    return new JetStreamRequestError(operation.what, undefined, `no JetStream stream takes subject '${operation.subject}'`, cause);
  }
  if (isNoResponders(error)) return new JetStreamRequestError(operation.what, undefined, 'JetStream is not enabled on the server', cause);
  if (UNAVAILABLE.has(error.code)) return new MessagingUnavailableError(operation.what, error.code.toLowerCase(), cause);
  if (AUTHENTICATION.has(error.code)) return new MessagingAuthenticationError(error.code.toLowerCase(), cause);
  if (CLOSED.has(error.code)) return new MessagingClosedError(operation.what);
  return new MessagingUnavailableError(operation.what, error.code.toLowerCase(), cause);
}
