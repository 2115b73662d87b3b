import { describe, expect, it } from 'vitest';
import {
  ConflictError,
  type ErrorKind,
  FailedPreconditionError,
  LoomError,
  MAX_VIOLATIONS_IN_MESSAGE,
  type LoomErrorOptions,
  NotFoundError,
  ResourceExhaustedError,
  UnavailableError,
  ValidationError,
} from './errors.js';

/** An error of any kind, as another error family would declare one. */
class KindError extends LoomError {
  constructor(
    readonly kind: ErrorKind,
    options?: LoomErrorOptions,
  ) {
    super(`a ${kind} failure`, options);
  }
}

describe('LoomError', () => {
  it('is retryable by default for the transient kinds only', () => {
    expect(new UnavailableError('down').retryable).toBe(true);
    expect(new ResourceExhaustedError('full').retryable).toBe(true);
    expect(new ConflictError('lost a race').retryable).toBe(true);
    expect(new FailedPreconditionError('disabled').retryable).toBe(false);
    expect(new NotFoundError('workflow', 'etl').retryable).toBe(false);
    expect(ValidationError.of('name', 'required').retryable).toBe(false);
    expect(new KindError('deadline-exceeded').retryable).toBe(false);
  });

  it('takes its own answer over the kind default, both ways', () => {
    expect(new KindError('unavailable', { retryable: false }).retryable).toBe(false);
    expect(new KindError('invalid-argument', { retryable: true }).retryable).toBe(true);
  });

  it('keeps its cause, names itself after its class, and adds no cause property when given none', () => {
    const cause = new Error('ECONNREFUSED');
    const error = new UnavailableError('the audit service is down', { cause });
    expect(error).toMatchObject({ name: 'UnavailableError', kind: 'unavailable', message: 'the audit service is down', cause });
    expect(Object.hasOwn(new KindError('aborted', { retryable: false }), 'cause')).toBe(false);
  });

  it('keeps retryable out of its own enumerable properties, so errors compared field by field are unchanged', () => {
    expect(Object.keys(new KindError('unavailable', { retryable: false }))).toEqual(['name', 'kind']);
  });
});

describe('ValidationError', () => {
  it('lists every violation in its message, up to MAX_VIOLATIONS_IN_MESSAGE, and keeps them all', () => {
    expect(
      new ValidationError([
        { field: 'a', description: 'is wrong' },
        { field: '', description: 'the file is empty' },
      ]).message,
    ).toBe('a: is wrong; the file is empty');
    const many = Array.from({ length: MAX_VIOLATIONS_IN_MESSAGE + 3 }, (_, n) => ({ field: `f${n}`, description: 'is wrong' }));
    const error = new ValidationError(many);
    expect(error.message.split('; ')).toHaveLength(MAX_VIOLATIONS_IN_MESSAGE);
    expect(error.message).toMatch(/^f0: is wrong; f1: is wrong; .* f19: is wrong \(and 3 more, every one in the error's field violations\)$/);
    expect(error.violations).toHaveLength(MAX_VIOLATIONS_IN_MESSAGE + 3);
  });
});
