import { type SecretRedactor } from '@loom/telemetry';
import { type ComponentError, type FailureRecord } from './runtime/component-error.js';

/** A component's failure as it may leave the process: its message beside its record, both redacted. */
export interface RedactedFailure extends FailureRecord {
  readonly message: string;
}

/**
 * The failure's message, kind, retryable flag and cause, with every secret registered with the redactor replaced as in
 * the logs: the texts quote what the component saw, which may be a value the workflow's start decrypted.
 */
export function redactedFailure(failure: ComponentError, redactor: SecretRedactor): RedactedFailure {
  const { kind, retryable, cause } = failure.record();
  const message = redactor.redact(failure.message);
  return cause === undefined ? { kind, retryable, message } : { kind, retryable, message, cause: redactor.redact(cause) };
}
