import { ExecutorClient, type MessageEvent, MessageEventKind, type TraceMessageResponse } from '@loom/contracts';
import { parseStoredName } from '@loom/domain';
import { call } from '@loom/service-kit/client';
import { type Command } from 'commander';
import { cliIo } from '../cli-io.js';
import { printTable } from '../output.js';
import { withClient } from '../service-client.js';

/** An event kind as printed: `processed`, `attempt-failed`, ... */
function kindName(kind: MessageEventKind): string {
  return (MessageEventKind[kind] ?? String(kind)).replace('MESSAGE_EVENT_KIND_', '').toLowerCase().replaceAll('_', '-');
}

/** A component as its workflow names it, without the instance's `_<uuid>`. */
function plain(instance: string): string {
  return parseStoredName(instance)?.base ?? instance;
}

/** What one event says beyond its kind and component: the outputs, or the failure and where it went. */
function detailOf(event: MessageEvent): string {
  if (event.kind === MessageEventKind.MESSAGE_EVENT_KIND_PROCESSED) {
    if (event.outputCount === 0) return 'emitted nothing (filtered out or consumed)';
    const more = event.outputCount > event.outputIds.length ? ` and ${event.outputCount - event.outputIds.length} more` : '';
    return `emitted ${event.outputCount}: ${event.outputIds.slice(0, 5).join(', ')}${event.outputIds.length > 5 ? ', …' : ''}${more}`;
  }
  const failure = event.failure === undefined ? '' : `${event.failure.kind}: ${event.failure.message}`;
  if (event.kind === MessageEventKind.MESSAGE_EVENT_KIND_FAILED) {
    return `${failure} (to ${event.failureHandler === '' ? 'the failure store' : `failure handler ${plain(event.failureHandler)}`})`;
  }
  return failure;
}

/** The trace as `--output json` prints it: times as ISO text, kinds by name. */
function jsonOf(trace: TraceMessageResponse): unknown {
  return {
    ...trace,
    retention: trace.retention === undefined ? undefined : `${trace.retention.seconds * 1000 + Math.floor(trace.retention.nanos / 1e6)}ms`,
    events: trace.events.map((event) => ({ ...event, time: event.time?.toISOString(), kind: kindName(event.kind), component: plain(event.component) })),
  };
}

/** `loom message trace ID`: what happened to one message, on this executor or, in a cluster, on every executor (issue 50). */
export function addMessageTraceCommand(message: Command): void {
  message
    .command('trace')
    .description(
      'what happened to one message: the components it passed, what each emitted, each failed attempt, its failure and retry (from the executors’ records of recent messages, every executor of a cluster asked, loom.executor.messageTrace.*)',
    )
    .argument('<id>', 'the message id (as published, or as `loom failures list` prints it under MESSAGEID)')
    .option('--workflow <name>', 'only this workflow (default: every workflow the executor records)')
    .action((id: string, options: { workflow?: string }, command: Command) =>
      withClient(command, ExecutorClient, async (client, globals) => {
        const trace = await call(client, 'traceMessage', { messageId: id, workflowName: options.workflow ?? '' });
        if (globals.output === 'json') {
          printTable('json', [], jsonOf(trace));
          return;
        }
        const workflows = [...new Set(trace.events.map((event) => plain(event.workflowName)))].join(', ');
        // in a cluster the record is every executor's: each event says which one's run it happened in
        const cluster = trace.executors.length > 1;
        const where = cluster ? `executors ${trace.executors.join(', ')}` : `executor ${trace.executorId}`;
        const missing = trace.unanswered.length === 0 ? '' : ` (not answering in time, their steps missing: ${trace.unanswered.join(', ')})`;
        cliIo().stdout.write(`message '${trace.messageId}' in ${workflows}: ${trace.events.length} events on ${where}${missing}\n`);
        printTable(
          'text',
          trace.events.map((event) => ({
            time: event.time?.toISOString() ?? '',
            event: kindName(event.kind),
            component: plain(event.component),
            message: event.messageId,
            attempt: event.attempt === 0 ? '' : event.attempt,
            version: event.workflowVersion,
            ...(cluster ? { executor: event.executorId } : {}),
            detail: detailOf(event),
          })),
        );
      }),
    );
}
