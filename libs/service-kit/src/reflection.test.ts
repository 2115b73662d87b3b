import { Metadata } from '@grpc/grpc-js';
import { descriptorSetPath } from '@loom/contracts';
import { withResolvers } from '@loom/foundation';
import { describe, expect, it } from 'vitest';
import { type ReflectionRequest, type ReflectionResponse, ReflectionUnavailableError, reflectionHandler } from './reflection.js';

/** Requests a test pushes; the iteration waits for the next as a client stream would. */
function requestQueue(): { requests: AsyncIterable<ReflectionRequest>; push: (request: ReflectionRequest) => void } {
  const pushed: ReflectionRequest[] = [];
  const waiting: ((request: ReflectionRequest) => void)[] = [];
  return {
    requests: {
      [Symbol.asyncIterator]: () => ({
        next: () =>
          new Promise<IteratorResult<ReflectionRequest>>((resolve) => {
            const ready = pushed.shift();
            if (ready === undefined) waiting.push((value) => resolve({ done: false, value }));
            else resolve({ done: false, value: ready });
          }),
      }),
    },
    push: (request) => {
      const reader = waiting.shift();
      if (reader === undefined) pushed.push(request);
      else reader(request);
    },
  };
}

function errorSink(): { sink: { error(fields: Record<string, unknown>, message: string): void }; errors: string[] } {
  const errors: string[] = [];
  return { sink: { error: (fields, message) => errors.push(`${message} ${String(fields['descriptorSetPath'])}`) }, errors };
}

describe('reflectionHandler', () => {
  it('answers UNAVAILABLE when the descriptor set cannot be read, logs why, and tries again on the next call', async () => {
    const { sink, errors } = errorSink();
    const handler = reflectionHandler('/nonexistent/loom.binpb', ['loom.v1.Secrets'], sink);
    const context = { identity: undefined, metadata: new Metadata(), signal: new AbortController().signal };
    for (let attempt = 0; attempt < 2; attempt++) {
      const failure = await handler(requestQueue().requests, () => Promise.resolve(), context).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(ReflectionUnavailableError);
      expect(failure).toMatchObject({ kind: 'unavailable', retryable: true });
      // the path is in the log, not in the caller's text
      expect((failure as Error).message).not.toContain('/nonexistent');
    }
    expect(errors).toEqual([
      'server reflection cannot read the descriptor set /nonexistent/loom.binpb',
      'server reflection cannot read the descriptor set /nonexistent/loom.binpb',
    ]);
  });

  it('answers each request in order and ends an idle stream when the call is aborted (shutdown)', async () => {
    const handler = reflectionHandler(descriptorSetPath, ['loom.v1.Secrets'], errorSink().sink);
    const controller = new AbortController();
    const { requests, push } = requestQueue();
    const answers: ReflectionResponse[] = [];
    const second = withResolvers<void>();
    const done = handler(
      requests,
      (response) => {
        answers.push(response);
        if (answers.length === 2) second.resolve();
        return Promise.resolve();
      },
      { identity: undefined, metadata: new Metadata(), signal: controller.signal },
    );
    push({ messageRequest: 'listServices', listServices: '' });
    push({ messageRequest: 'fileContainingSymbol', fileContainingSymbol: 'loom.v1.Nothing' });
    await second.promise;
    controller.abort();
    await done;
    expect(answers.map((answer) => answer.listServicesResponse?.service ?? answer.errorResponse)).toEqual([
      [{ name: 'loom.v1.Secrets' }],
      { errorCode: 5, errorMessage: 'symbol "loom.v1.Nothing" not found' },
    ]);
  });
});
