import { Metadata, status } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { apiErrorOf } from './loom-calls.js';

/** A grpc-js ServiceError as a failed call rejects with it. */
function serviceError(code: status, details: string): Error {
  return Object.assign(new Error(`${code} ${status[code]}: ${details}`), { code, details, metadata: new Metadata() });
}

describe('a failed gRPC call as the console answers it', () => {
  it('keeps the status the user can act on and the service’s message', () => {
    expect(apiErrorOf(serviceError(status.PERMISSION_DENIED, "identity 'dana' lacks the permission 'operate'"), 'executor')).toMatchObject({
      status: 403,
      message: "identity 'dana' lacks the permission 'operate'",
    });
    expect(apiErrorOf(serviceError(status.NOT_FOUND, "no workflow 'x'"), 'config-store').status).toBe(404);
    expect(apiErrorOf(serviceError(status.INVALID_ARGUMENT, 'ids: must not be empty'), 'executor').status).toBe(400);
    expect(apiErrorOf(serviceError(status.FAILED_PRECONDITION, 'workflow is STOPPED'), 'executor').status).toBe(409);
    expect(apiErrorOf(serviceError(status.UNAUTHENTICATED, 'invalid bearer token'), 'executor').status).toBe(401);
  });

  it('says a service is down (503) or failed (502) without its internal text', () => {
    const down = apiErrorOf(serviceError(status.UNAVAILABLE, 'connect ECONNREFUSED 127.0.0.1:8100'), 'audit');
    expect(down).toMatchObject({ status: 503, message: 'the audit service cannot be reached; try again shortly', retryable: true });
    const failed = apiErrorOf(serviceError(status.INTERNAL, 'TypeError: x is undefined at /opt/loom/...'), 'executor');
    expect(failed.status).toBe(502);
    expect(failed.message).not.toContain('TypeError');
    expect(apiErrorOf(new Error('socket hang up'), 'scheduler').status).toBe(502);
  });
});
