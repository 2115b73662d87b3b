import { describe, expect, it } from 'vitest';
import {
  ConflictError,
  type ErrorKind,
  FailedPreconditionError,
  LoomError,
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
