import { inspect } from 'node:util';
import { type ErrorKind, LoomError } from '@loom/domain';

/** What a failure handler and the audit log record of a ComponentError: plain JSON, no stack. */
export interface FailureRecord {
  readonly kind: ErrorKind;
  readonly retryable: boolean;
  /** The error behind it, `<name>: <message>`, when there was one. */
  readonly cause?: string;
}

/**
 * A component could not finish a message (or died with it): which component, what kind of failure,
 * whether the same message may succeed if sent again later, and the error behind it as `cause`.
 * The run hands this object, not its text, to the failure handling (`RunOptions.onFailure`, the
 * failure handler's message, the audit event).
 */
export class ComponentError extends LoomError {
  readonly kind: ErrorKind;

  constructor(
    /** The instance name of the component, `<component_name>_<uuid>`. */
    readonly component: string,
    message: string,
    /** True when the same message may succeed later (a transient failure, a component that died). */
    retryable: boolean,
    options: { readonly kind?: ErrorKind; readonly cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? { retryable } : { cause: options.cause, retryable });
    this.kind = options.kind ?? kindOf(options.cause, retryable);
  }

  /** The kind, retryable flag and cause as plain JSON. */
  record(): FailureRecord {
    const cause = causeText(this.cause);
    return cause === undefined ? { kind: this.kind, retryable: this.retryable } : { kind: this.kind, retryable: this.retryable, cause };
  }
}

/**
 * Makes an error without capturing the call stack, for the failure of one message: an outcome made once per failed
 * message, whose stack would hold only the runtime's own frames (the message, the component and the cause say what
 * happened). Capturing it cost about 4 µs an error on this machine, a tenth of what keeping a failed message cost
 * (issue 50's measure).
 */
export function withoutStack<T>(make: () => T): T {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return make();
  } finally {
    Error.stackTraceLimit = limit;
  }
}

/** A typed cause keeps its kind; otherwise a retryable failure is `unavailable`, and a message refused for good `invalid-argument`. */
function kindOf(cause: unknown, retryable: boolean): ErrorKind {
  if (cause instanceof LoomError) return cause.kind;
  return retryable ? 'unavailable' : 'invalid-argument';
}

function causeText(cause: unknown): string | undefined {
  if (cause === undefined) return undefined;
  if (cause instanceof Error) return `${cause.name}: ${cause.message}`;
  return typeof cause === 'string' ? cause : inspect(cause, { depth: 2, breakLength: Infinity });
}
