import { credentials } from '@grpc/grpc-js';
import { ExecutorClient } from '@loom/contracts';
import { derivedInstanceName } from '@loom/domain';
import { sourceSubject, streamName } from '@loom/messaging';
import { call } from '@loom/service-kit';
import { natsServerBinary, type NatsTestServer, startNatsServer } from '@loom/testing';
import { connect } from 'nats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectOneTrace, INLET, publishBatchTraced, publishTraced, startTracedLoom, type TracedLoom, WORKFLOW } from './message-trace.js';

/**
 * Issue 49: one published message is one trace when loom keeps its messages in NATS JetStream: the trace context the
 * PublishMessage call brought travels in the stored message's headers to the consumer that takes it back into the run.
 */
const binary = natsServerBinary('one trace per message, durable (services/cli/test/message-trace-durable.test.ts)');

describe.skipIf(binary === undefined)('one trace per message, durable (NATS JetStream)', () => {
  let nats: NatsTestServer;
  let traced: TracedLoom;
  beforeAll(async () => {
    nats = await startNatsServer({ binary: binary! });
    traced = await startTracedLoom([`loom.messaging.nats.servers=${nats.url}`]);
  });
  afterAll(async () => {
    await traced?.stop();
    await nats?.close();
  });

  it('stores the call’s trace context in the message’s headers and joins the caller, the publish span and every component in one trace', async () => {
    const executor = new ExecutorClient(traced.loom.address, credentials.createInsecure());
    const connection = await connect({ servers: nats.url });
    try {
      // paused, the run stores what is published and takes nothing back: the stored message can be read as it is kept
      await call(executor, 'pauseWorkflow', { name: traced.workflowName });
      const { span, messageId } = await publishTraced(traced, {
        messageId: 'traced-durable',
        body: { title: 'graphs', text: 'a long enough article kept in JetStream' },
        headers: {},
      });
      const jetStream = await connection.jetstreamManager();
      const subject = sourceSubject(traced.workflowName, derivedInstanceName(WORKFLOW, 'component', INLET));
      const stored = await jetStream.streams.getMessage(streamName(traced.workflowName), { last_by_subj: subject });
      const traceparent = stored.header.get('traceparent');
      expect(traceparent).toMatch(new RegExp(`^00-${span.spanContext().traceId}-[0-9a-f]{16}-01$`));

      await call(executor, 'resumeWorkflow', { name: traced.workflowName });
      const [path] = await expectOneTrace(traced, span, [messageId]);
      // the stored traceparent names the message's first span in loom (emit Articles), which the consumer's spans follow
      expect(traceparent.split('-')[2]).toBe(path?.[0]?.spanId);
    } finally {
      executor.close();
      await connection.close();
    }
  });

  it('joins each message of a traced PublishMessages call to the call, stored and taken back in one trace', async () => {
    const body = (n: number) => ({ title: `batch ${n}`, text: 'a long enough article stored in a batch' });
    const { span, messageIds } = await publishBatchTraced(traced, [
      { messageId: 'traced-batch-1', body: body(1), headers: {} },
      { messageId: 'traced-batch-2', body: body(2), headers: { 'x-source': 'batch' } },
    ]);
    expect(messageIds).toEqual(['traced-batch-1', 'traced-batch-2']);
    await expectOneTrace(traced, span, messageIds, 'PublishMessages');
  });
});
