import { type FieldViolation, ValidationError } from '@loom/foundation';

/** Runs `action`, expects a ValidationError and returns its violations. */
export function violationsThrownBy(action: () => unknown): readonly FieldViolation[] {
  try {
    action();
  } catch (error) {
    if (error instanceof ValidationError) return error.violations;
    throw error;
  }
  throw new Error('expected a ValidationError, nothing was thrown');
}

/** Runs `action`, expects a ValidationError and returns its violations one a line: `field: description (REASON)`. */
export function violationLinesThrownBy(action: () => unknown): string[] {
  return violationsThrownBy(action).map(({ field, description, reason }) => {
    const line = field === '' ? description : `${field}: ${description}`;
    return reason === undefined ? line : `${line} (${reason})`;
  });
}

/** Runs `action`, expects a ValidationError and returns the fields it names. */
export function fieldsThrownBy(action: () => unknown): string[] {
  return violationsThrownBy(action).map((violation) => violation.field);
}

/** A parsed JSON document that a test pokes into freely to break it in one place. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests reach anywhere into documents of any shape
export type LooseJson = any;
