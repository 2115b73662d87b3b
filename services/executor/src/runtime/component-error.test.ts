import { describe, expect, it } from 'vitest';
import { ComponentError, withoutStack } from './component-error.js';

describe('withoutStack', () => {
  it('makes an error with no frames in its stack, keeping its message, kind and cause', () => {
    const cause = new Error('refused');
    const error = withoutStack(() => new ComponentError('Check_1', 'refused', false, { cause }));
    expect(error.stack).toBe('ComponentError: refused');
    expect(error.record()).toEqual({ kind: 'invalid-argument', retryable: false, cause: 'Error: refused' });
    // the cause was made elsewhere and keeps its own stack
    expect(cause.stack).toContain('\n    at ');
  });

  it('puts the stack limit back, also when making the error throws', () => {
    const limit = Error.stackTraceLimit;
    expect(() =>
      withoutStack(() => {
        throw new Error('no');
      }),
    ).toThrow('no');
    expect(Error.stackTraceLimit).toBe(limit);
    expect(new Error('later').stack).toContain('\n    at ');
  });
});
