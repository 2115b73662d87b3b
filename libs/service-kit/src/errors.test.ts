import { status } from '@grpc/grpc-js';
import { ValidationError } from '@loom/domain';
import { describe, expect, it } from 'vitest';
import { fieldViolationsOf, MAX_BAD_REQUEST_BYTES, statusError, toStatusObject } from './errors.js';

const sink = { error: () => undefined };

/** A status object as a client sees the failed call. */
function asServiceError(error: unknown) {
  const { code, details, metadata } = toStatusObject(error, sink);
  return Object.assign(new Error(details), { code: code ?? status.UNKNOWN, details: details ?? '', metadata: metadata! });
}

describe('google.rpc.BadRequest details', () => {
  it('carries every violation of a ValidationError, in order', () => {
    const violations = Array.from({ length: 30 }, (_, n) => ({ field: `components[${n}].name`, description: 'is wrong', reason: 'INVALID_VALUE' }));
    expect(fieldViolationsOf(asServiceError(new ValidationError(violations)))).toEqual(violations);
  });

  it('keeps the first violations that fit in MAX_BAD_REQUEST_BYTES, so the trailer reaches the client', () => {
    const violations = Array.from({ length: 2_000 }, (_, n) => ({
      field: `messages[${n}]`,
      description: `workflow 'x' is STOPPED, not RUNNING (${n})`,
      reason: 'FAILED_PRECONDITION',
    }));
    const error = statusError(status.FAILED_PRECONDITION, 'no message of the 2000 was accepted', violations);
    const kept = fieldViolationsOf(error);
    expect(kept.length).toBeGreaterThan(100);
    expect(kept.length).toBeLessThan(violations.length);
    expect(kept).toEqual(violations.slice(0, kept.length));
    const [details] = error.metadata.get('grpc-status-details-bin');
    expect((details as Buffer).length).toBeLessThan(MAX_BAD_REQUEST_BYTES + 200);
  });
});
