import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectOneTrace, publishTraced, startTracedLoom, type TracedLoom } from './message-trace.js';

/**
 * Issue 49: one published message is one trace, in memory. A real OTLP/HTTP receiver gets loom's spans and the caller's;
 * the caller is traced as any OpenTelemetry-instrumented gRPC client is and puts no traceparent in the message.
 */
let traced: TracedLoom;
beforeAll(async () => {
  traced = await startTracedLoom();
});
afterAll(async () => {
  await traced?.stop();
});

describe('one trace per message, in memory', () => {
  it('joins the caller, the PublishMessage span and every component of the message in one trace', async () => {
    const { span, messageId } = await publishTraced(traced, {
      messageId: 'traced-in-memory',
      body: { title: 'graphs', text: 'a long enough article about graphs' },
      headers: {},
    });
    expect(messageId).toBe('traced-in-memory');
    await expectOneTrace(traced, span, [messageId]);
  });

  it('gives loom an id for a message without one and names it on the publish span', async () => {
    const { span, messageId } = await publishTraced(traced, { messageId: '', body: { title: 'ids', text: 'an article whose id loom gives it' }, headers: {} });
    expect(messageId).toMatch(/^[0-9a-f-]{36}$/);
    await expectOneTrace(traced, span, [messageId]);
  });
});
