import { randomUUID } from 'node:crypto';
import { type ExecutorService } from '@loom/contracts';
import { ValidationError } from '@loom/domain';
import { type AsyncImplementation, type ErrorSink } from '@loom/service-kit';
import { type Executor } from './executor.service.js';
import { publishTrace } from './publish-trace.js';
import { checkBatchSize, publishBatch, throwIfNoneAccepted } from './publishing.js';
import { type WorkflowRun } from './runtime/workflow-run.js';

/** The loom.v1.Executor handlers that publish messages into a running workflow: PublishMessage, PublishMessages, PublishStream. */
export function publishHandlers(
  executor: Executor,
  logger: ErrorSink,
): Pick<AsyncImplementation<typeof ExecutorService>, 'publishMessage' | 'publishMessages' | 'publishStream'> {
  return {
    async publishMessage(request, context) {
      const traced = publishTrace(context);
      if (request.inlet === '') throw ValidationError.of('inlet', 'is required', 'MISSING_FIELD');
      if (request.body === undefined) throw ValidationError.of('body', 'is required: a JSON object', 'MISSING_FIELD');
      const run = await executor.requireRun(request.workflowName, 'workflow_name');
      const clientId = request.messageId !== '';
      const messageId = clientId ? request.messageId : randomUUID();
      traced.published(run.workflow.name, [{ messageId }]);
      // the context itself: its signal (an AbortController) is made only if the message must wait for room
      const outcome = await run.publish(request.inlet, { id: messageId, body: request.body, headers: traced.headersOf(request.headers) }, context, clientId);
      return { messageId, duplicate: outcome === 'duplicate' };
    },

    async publishMessages(request, context) {
      const traced = publishTrace(context);
      if (request.inlet === '') throw ValidationError.of('inlet', 'is required', 'MISSING_FIELD');
      checkBatchSize(request.messages, 'messages');
      const run = await executor.requireRun(request.workflowName, 'workflow_name');
      run.checkInlet(request.inlet);
      const results = await publishBatch(run, request.inlet, traced.withTrace(request.messages), context.signal, 'messages', logger);
      traced.published(run.workflow.name, results);
      throwIfNoneAccepted(results, 'messages');
      return { results };
    },

    async publishStream(requests, send, context) {
      const traced = publishTrace(context);
      let run: WorkflowRun | undefined;
      let inlet = '';
      let index = 0;
      // one request at a time: the next is read only once this one's messages were accepted, so a
      // full workflow stops the reads and HTTP/2 flow control slows the sender down
      for await (const request of requests) {
        const field = `requests[${index}]`;
        if (run === undefined || (request.workflowName !== '' && request.workflowName !== run.workflow.name)) {
          if (request.workflowName === '') throw ValidationError.of(`${field}.workflow_name`, 'is required in the first request', 'MISSING_FIELD');
          run = await executor.requireRun(request.workflowName, `${field}.workflow_name`);
        }
        if (request.inlet !== '') inlet = request.inlet;
        if (inlet === '') throw ValidationError.of(`${field}.inlet`, 'is required in the first request', 'MISSING_FIELD');
        run.checkInlet(inlet);
        checkBatchSize(request.messages, `${field}.messages`);
        await send({ results: await publishBatch(run, inlet, traced.withTrace(request.messages), context.signal, `${field}.messages`, logger) });
        traced.streamed(run.workflow.name, request.messages.length);
        index++;
      }
    },
  };
}
