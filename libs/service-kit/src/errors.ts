import { randomUUID } from 'node:crypto';
import { Metadata, status, type ServiceError, type StatusObject } from '@grpc/grpc-js';
import { type Any, BadRequest, RpcStatus } from '@loom/contracts';
import { type ErrorKind, type FieldViolation, LoomError, ValidationError } from '@loom/domain';

/** The trailer that carries a serialized google.rpc.Status with error details. */
export const STATUS_DETAILS_KEY = 'grpc-status-details-bin';
const BAD_REQUEST_TYPE_URL = 'type.googleapis.com/google.rpc.BadRequest';

const statusByKind: Record<ErrorKind, status> = {
  'invalid-argument': status.INVALID_ARGUMENT,
  'not-found': status.NOT_FOUND,
  'already-exists': status.ALREADY_EXISTS,
  'failed-precondition': status.FAILED_PRECONDITION,
  aborted: status.ABORTED,
  'permission-denied': status.PERMISSION_DENIED,
  unauthenticated: status.UNAUTHENTICATED,
  'resource-exhausted': status.RESOURCE_EXHAUSTED,
  unavailable: status.UNAVAILABLE,
  'deadline-exceeded': status.DEADLINE_EXCEEDED,
  unimplemented: status.UNIMPLEMENTED,
};

/** True when the text is one of loom's error kinds (as a loom.v1.Failure's `kind` names it). */
export function isErrorKind(text: string): text is ErrorKind {
  return Object.hasOwn(statusByKind, text);
}

/** Where the mapper reports errors it hides from the caller. */
export interface ErrorSink {
  error(fields: Record<string, unknown>, message: string): void;
}

/**
 * Maps any thrown value to the status a client sees. Typed loom errors keep their message;
 * anything else becomes INTERNAL with a reference id, its detail going only to the log.
 */
export function toStatusObject(error: unknown, sink: ErrorSink): Partial<StatusObject> {
  if (error instanceof LoomError) {
    const code = statusByKind[error.kind];
    const metadata = new Metadata();
    if (error instanceof ValidationError) {
      metadata.set(STATUS_DETAILS_KEY, encodeBadRequest(code, error.message, error.violations));
    }
    return { code, details: error.message, metadata };
  }
  if (isServiceError(error)) {
    // An error from a call to another service: pass its status on, not its internals.
    return { code: error.code, details: error.details, metadata: error.metadata };
  }
  const reference = randomUUID();
  sink.error({ err: error, reference }, 'unhandled error in RPC handler');
  return { code: status.INTERNAL, details: `internal error (reference ${reference})`, metadata: new Metadata() };
}

/**
 * A status error a handler throws to answer with this code and text, and google.rpc.BadRequest field violations when
 * given: for an outcome no one loom error kind stands for (PublishMessages answering the first refusal's code).
 */
export function statusError(code: status, message: string, violations: readonly FieldViolation[] = []): ServiceError {
  const metadata = new Metadata();
  if (violations.length > 0) metadata.set(STATUS_DETAILS_KEY, encodeBadRequest(code, message, violations));
  return Object.assign(new Error(`${code} ${status[code]}: ${message}`), { code, details: message, metadata });
}

/** Returns true if the value is a status error from a grpc-js call. */
export function isServiceError(error: unknown): error is ServiceError {
  return error instanceof Error && typeof (error as Partial<ServiceError>).code === 'number' && 'metadata' in error;
}

/**
 * Most bytes of field violations a status's google.rpc.BadRequest carries (the first violations that fit, in order). A
 * trailer past Node's HTTP/2 limit on a header list (64 KiB) never reaches the client, whose call then waits for its
 * deadline; 16 KiB of violations (about a hundred) leave room for the rest of the trailers.
 */
export const MAX_BAD_REQUEST_BYTES = 16 * 1024;

/** google.rpc.BadRequest with the first violations that fit in MAX_BAD_REQUEST_BYTES (at least one). */
function encodeBadRequest(code: status, message: string, violations: readonly FieldViolation[]): Buffer {
  const fieldViolations: { field: string; description: string; reason: string }[] = [];
  let bytes = 0;
  for (const v of violations) {
    const violation = { field: v.field, description: v.description, reason: v.reason ?? '' };
    // a repeated field's encoding is its entries' encodings one after the other
    bytes += BadRequest.encode({ fieldViolations: [violation] }).finish().length;
    if (bytes > MAX_BAD_REQUEST_BYTES && fieldViolations.length > 0) break;
    fieldViolations.push(violation);
  }
  const badRequest = BadRequest.encode({ fieldViolations }).finish();
  const rpcStatus = RpcStatus.encode({
    code,
    message,
    details: [{ typeUrl: BAD_REQUEST_TYPE_URL, value: Buffer.from(badRequest) }],
  }).finish();
  return Buffer.from(rpcStatus);
}

/** Reads the google.rpc.BadRequest field violations a failed call carries, if any. */
export function fieldViolationsOf(error: ServiceError): FieldViolation[] {
  const [raw] = error.metadata?.get(STATUS_DETAILS_KEY) ?? [];
  if (!(raw instanceof Buffer)) return [];
  const rpcStatus = RpcStatus.decode(raw);
  return rpcStatus.details
    .filter((detail: Any) => detail.typeUrl === BAD_REQUEST_TYPE_URL)
    .flatMap((detail: Any) => BadRequest.decode(detail.value).fieldViolations)
    .map((v) => (v.reason === '' ? { field: v.field, description: v.description } : v));
}
