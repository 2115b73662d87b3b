/** The JSON body of every error a skill service answers: `{error, message, field?}`. */
export interface SkillErrorBody {
  /** A stable machine-readable code, e.g. `invalid_request`, `unknown_pipeline`, `busy`. */
  readonly error: string;
  /** What went wrong, for a person. */
  readonly message: string;
  /** JSON path of the request field at fault (`annotators[2]`), when one is. */
  readonly field?: string;
}

/** A failure a caller can act on, answered with its HTTP status and a JSON body. */
export abstract class SkillError extends Error {
  abstract readonly status: number;
  abstract readonly code: string;
  readonly field: string | undefined;

  constructor(message: string, options: { field?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.field = options.field;
  }

  /** The response body. */
  toBody(): SkillErrorBody {
    return { error: this.code, message: this.message, ...(this.field === undefined ? {} : { field: this.field }) };
  }
}

/** 400: the request breaks its schema or a rule of the endpoint. */
export class InvalidRequestError extends SkillError {
  readonly status = 400;
  readonly code = 'invalid_request';
}

/** A skill error whose code its thrower chooses (`unknown_pipeline`, `unreadable_pdf`). */
abstract class CodedSkillError extends SkillError {
  readonly code: string;
  constructor(code: string, message: string, options: { field?: string; cause?: unknown } = {}) {
    super(message, options);
    this.code = code;
  }
}

/** 404: a named thing (a pipeline) does not exist. */
export class NotFoundError extends CodedSkillError {
  readonly status = 404;
}

/** 413: the request body, or a document it names, is over a size limit. */
export class PayloadTooLargeError extends SkillError {
  readonly status = 413;
  readonly code = 'payload_too_large';
}

/** 415: the request's media type is not one the endpoint reads. */
export class UnsupportedMediaTypeError extends SkillError {
  readonly status = 415;
  readonly code = 'unsupported_media_type';
}

/** 422: the request is well formed but its content cannot be processed (a malformed PDF, a page that cannot be fetched). */
export class UnprocessableError extends CodedSkillError {
  readonly status = 422;
}

/** 503: the service is full, out of time for this request, or stopping; `retryAfterSeconds` goes into `Retry-After`. */
export class ServiceBusyError extends SkillError {
  readonly status = 503;
  readonly code: string;
  readonly retryAfterSeconds: number;
  constructor(code: string, message: string, retryAfterSeconds = 1) {
    super(message);
    this.code = code;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** A setting of a skill service is invalid; the message names the key. */
export class SkillSettingsError extends Error {
  constructor(
    readonly key: string,
    message: string,
  ) {
    super(`${key}: ${message}`);
    this.name = 'SkillSettingsError';
  }
}
