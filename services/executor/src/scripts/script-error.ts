import { type ErrorKind, LoomError } from '@loom/domain';
import { type Outcome, outcome } from '../runtime/component.js';
import { withoutStack } from '../runtime/component-error.js';

/**
 * A script component could not finish a message: the script raised or returned something it may not
 * (`invalid-argument`), ran past its time limit (`deadline-exceeded`), past its memory limit
 * (`resource-exhausted`), or lost its interpreter (`unavailable`). The cause of the message's failure,
 * so the failure handler and the audit log see its kind. Never retried: the same script fails the
 * same message again.
 */
export class ScriptError extends LoomError {
  constructor(
    message: string,
    readonly kind: ErrorKind = 'invalid-argument',
  ) {
    super(message);
  }
}

/** The failed outcome of a script component's message, its ScriptError (without a stack: the script's text is in it) as the cause. */
export function scriptFailure(error: string, kind?: ErrorKind): Outcome {
  return outcome.fail(
    error,
    false,
    withoutStack(() => new ScriptError(error, kind)),
  );
}
