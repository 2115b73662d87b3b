import { ComponentState, type ComponentStatus, ExecutorClient, type GetWorkflowStatusResponse, type WatchRunResponse, WorkflowState } from '@loom/contracts';
import { parseJsonText } from '@loom/domain';
import { componentDefinitionsFromProto, workflowToProto } from '@loom/domain/proto';
import { call } from '@loom/service-kit/client';
import { type Command, InvalidArgumentError } from 'commander';
import { type GlobalOptions } from '../global-options.js';
import { UsageError } from '../usage-error.js';
import { printTable } from '../output.js';
import { withClient } from '../service-client.js';
import { readWorkflowFile } from '../workflow-file.js';
import { cliIo, inputPath, inThisRun, setExitCode } from '../cli-io.js';
import { addMessageTraceCommand } from './message-trace.js';
import { addReplayCommand } from './replay.js';
import { addWorkflowTestCommand } from './workflow-test.js';

function withExecutor<T>(command: Command, use: (client: ExecutorClient, globals: GlobalOptions) => Promise<T>): Promise<T> {
  return withClient(command, ExecutorClient, use);
}

const stateName = (state: WorkflowState): string => WorkflowState[state]?.replace('WORKFLOW_STATE_', '') ?? String(state);

/** A JSON object given on the command line; anything else is a usage error naming the option. */
function jsonObject(option: string): (value: string, previous?: Record<string, unknown>[]) => Record<string, unknown>[] {
  return (value, previous = []) => {
    let parsed: unknown;
    try {
      parsed = parseJsonText(value);
    } catch (error) {
      throw new InvalidArgumentError(`${option} must be a JSON object: ${error instanceof Error ? error.message : String(error)}`);
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new InvalidArgumentError(`${option} must be a JSON object`);
    return [...previous, parsed as Record<string, unknown>];
  };
}

function parseCount(value: string): number {
  const count = Number(value);
  if (!Number.isSafeInteger(count) || count < 0 || count > 0xffffffff) throw new InvalidArgumentError('expected a whole number, 0 or more');
  return count;
}

function parseSeconds(value: string): number {
  const seconds = Number(value);
  if (!Number.isFinite(seconds) || seconds < 0) throw new InvalidArgumentError('expected a number of seconds');
  return seconds;
}

/** Counters of components as table rows, each row led by `lead` (the executor's column, when there is one). */
function componentRows(components: readonly ComponentStatus[], lead: Record<string, string> = {}): Record<string, string | number>[] {
  return components.map((component) => ({
    ...lead,
    component: component.name,
    in: component.messagesIn,
    out: component.messagesOut,
    failed: component.messagesFailed,
    retried: component.messagesRetried,
    queued: component.queueDepth,
    lastError: component.lastError === '' ? '-' : component.lastError,
  }));
}

/**
 * A workflow's status: its state, run and components' counters; with several executors sharing it (durable mode),
 * those are the totals, followed by each executor's state and its own counters.
 */
function printStatus(globals: GlobalOptions, status: GetWorkflowStatusResponse): void {
  if (globals.output === 'json') {
    const executors = status.executors.map((part) => ({ ...part, state: stateName(part.state) }));
    printTable('json', [], { ...status, state: stateName(status.state), executors });
    return;
  }
  cliIo().stdout.write(`${status.name}  ${stateName(status.state)}  run ${status.runId}  since ${status.startedAt?.toISOString() ?? '-'}\n`);
  if (status.lastError !== '') cliIo().stdout.write(`last error: ${status.lastError}\n`);
  if (status.executors.length > 0) cliIo().stdout.write(`totals over ${status.executors.length} executors (answered by ${status.executorId}):\n`);
  printTable('text', componentRows(status.components));
  if (status.executors.length === 0) return;
  cliIo().stdout.write('\nexecutors:\n');
  printTable(
    'text',
    status.executors.map((part) => ({
      executor: part.executorId,
      state: stateName(part.state),
      run: part.runId === '' ? '-' : part.runId,
      reported: part.updatedAt?.toISOString() ?? '-',
      lastError: part.lastError === '' ? '-' : part.lastError,
    })),
  );
  cliIo().stdout.write('\n');
  printTable(
    'text',
    status.executors.flatMap((part) => componentRows(part.components, { executor: part.executorId })),
  );
}

/**
 * One WatchRun event a line: time, state, then the fields that are set; a failure with its kind, whether it is
 * retryable, and its cause. With `--output json`, the event as a JSON line (state by name).
 */
function printRunEvent(globals: GlobalOptions, event: WatchRunResponse): void {
  if (globals.output === 'json') {
    cliIo().stdout.write(`${JSON.stringify({ ...event, state: stateName(event.state) })}\n`);
    return;
  }
  const { failure } = event;
  // names and kinds as they are, free texts quoted
  const fields = [
    event.executorId === '' ? '' : `executor=${event.executorId}`,
    event.component === '' ? '' : `component=${event.component}`,
    event.error === '' ? '' : `error=${JSON.stringify(event.error)}`,
    failure === undefined ? '' : `kind=${failure.kind}  retryable=${failure.retryable}`,
    failure === undefined || failure.cause === '' ? '' : `cause=${JSON.stringify(failure.cause)}`,
  ].filter((field) => field !== '');
  cliIo().stdout.write(`${[event.time?.toISOString() ?? '', stateName(event.state), ...fields].join('  ')}\n`);
}

/** `loom component list`, `loom workflow start|stop|pause|resume|status|watch|dry-run|test` and `loom message publish`; returns the `component` command. */
export function addExecutorCommands(program: Command, workflow: Command): { component: Command } {
  const component = program.command('component').description('the component catalog of the executor');
  component
    .command('list')
    .description('list component kinds; --output json prints the definitions as the specification writes them')
    .action((_options: object, command: Command) =>
      withExecutor(command, async (client, globals) => {
        const { definitions } = await call(client, 'listComponentDefinitions', {});
        const shown = componentDefinitionsFromProto(definitions);
        printTable(
          globals.output,
          definitions.map((definition) => ({
            qualifiedName: definition.qualifiedName,
            name: definition.name,
            state: ComponentState[definition.state]?.replace('COMPONENT_STATE_', '') ?? '',
            dryRun: definition.dryRunSupported ? 'yes' : 'no',
          })),
          shown,
        );
      }),
    );

  workflow
    .command('start')
    .description('start a stored workflow on the executor')
    .argument('<name>', 'stored name, or the workflow name when only one has it')
    .action((name: string, _options: object, command: Command) =>
      withExecutor(command, async (client, globals) => {
        const started = await call(client, 'startWorkflow', { name });
        // idempotent: a running workflow is answered with its run, nothing started
        const note = started.alreadyRunning ? 'no, already running' : 'yes';
        printTable(globals.output, [{ workflow: name, runId: started.runId, state: stateName(started.state), started: note }]);
      }),
    );

  workflow
    .command('stop')
    .description('stop a running workflow: sources stop, in-flight messages drain, components close')
    .argument('<name>', 'stored name, or the workflow name when only one has it')
    .option('--drain <seconds>', 'how long in-flight messages may drain (server default 30)', parseSeconds)
    .action((name: string, options: { drain?: number }, command: Command) =>
      withExecutor(command, async (client, globals) => {
        const drainTimeout = options.drain === undefined ? undefined : { seconds: Math.floor(options.drain), nanos: Math.round((options.drain % 1) * 1e9) };
        const stopped = await call(client, 'stopWorkflow', { name, drainTimeout }, { deadlineMs: ((options.drain ?? 30) + 30) * 1000 });
        printTable(globals.output, [{ workflow: name, state: stateName(stopped.state) }]);
      }),
    );

  for (const [verb, rpc, description] of [
    ['pause', 'pauseWorkflow', 'pause a running workflow: sources and stream consumers take no new messages, those in flight finish (every executor)'],
    ['resume', 'resumeWorkflow', 'resume a paused workflow: it takes messages again (every executor)'],
  ] as const) {
    workflow
      .command(verb)
      .description(description)
      .argument('<name>', 'stored name, or the workflow name when only one has it')
      .action((name: string, _options: unknown, command: Command) =>
        withExecutor(command, async (client, globals) => {
          const { state } = await call(client, rpc, { name });
          printTable(globals.output, [{ workflow: name, state: stateName(state) }]);
        }),
      );
  }

  workflow
    .command('status')
    .description("a workflow's run state and per-component counters")
    .argument('<name>', 'stored name, or the workflow name when only one has it')
    .action((name: string, _options: object, command: Command) =>
      withExecutor(command, async (client, globals) => printStatus(globals, await call(client, 'getWorkflowStatus', { name }))),
    );

  workflow
    .command('watch')
    .description("print a workflow run's state changes and component errors (kind, retryable, cause) as they happen, until the run ends; exit 1 if it failed")
    .argument('<name>', 'stored name, or the workflow name when only one has it')
    .action((name: string, _options: object, command: Command) =>
      withExecutor(command, async (client, globals) => {
        const stream = client.watchRun({ name });
        let last: WatchRunResponse | undefined;
        let interrupt = (): void => undefined;
        try {
          await new Promise<void>((resolve, reject) => {
            interrupt = () => {
              stream.cancel();
              resolve();
            };
            process.once('SIGINT', interrupt);
            stream.on(
              'data',
              inThisRun((event: WatchRunResponse) => {
                last = event;
                printRunEvent(globals, event);
              }),
            );
            stream.on('error', reject);
            stream.on('end', resolve);
          });
        } finally {
          process.off('SIGINT', interrupt);
        }
        if (last?.state === WorkflowState.WORKFLOW_STATE_FAILED) setExitCode(1);
      }),
    );

  addReplayCommand(workflow);
  addWorkflowTestCommand(workflow);

  workflow
    .command('dry-run')
    .description('run sample messages through a workflow file (full or compact) without side effects; prints what each component emitted')
    .argument('<file>', 'a .workflow.json file, or a compact .workflow.yaml (or .json) file')
    .requiredOption('--message <json>', 'a sample message body (repeatable)', jsonObject('--message'))
    .option('--inlet <name>', 'source that receives the messages (default: the first source)', '')
    .option('--until <component>', 'the last component that runs: what it emits goes no further (default: the whole workflow)', '')
    .option('--max-messages <n>', 'at most this many messages enter and leave each component, the rest dropped (default: no cap)', parseCount, 0)
    .action((file: string, options: { message: Record<string, unknown>[]; inlet: string; until: string; maxMessages: number }, command: Command) =>
      withExecutor(command, async (client, globals) => {
        const { outputs } = await call(client, 'dryRun', {
          workflow: workflowToProto(readWorkflowFile(file).workflow),
          messages: options.message.map((body, index) => ({ id: `sample-${index + 1}`, body, headers: {} })),
          inlet: options.inlet,
          until: options.until,
          maxMessages: options.maxMessages,
        });
        printTable(
          globals.output,
          outputs.flatMap((output) => [
            ...output.messages.map((message) => ({ component: output.component, emitted: JSON.stringify(message.body) })),
            ...output.errors.map((error) => ({ component: output.component, emitted: `error: ${error}` })),
            ...(output.skipped ? [{ component: output.component, emitted: '(skipped: no dry run for this kind; messages passed through)' }] : []),
            ...(output.truncated ? [{ component: output.component, emitted: `(truncated: more than ${options.maxMessages} messages, the rest dropped)` }] : []),
          ]),
          outputs,
        );
      }),
    );

  const message = program.command('message').description('messages of running workflows: publish, trace');
  message
    .command('publish')
    .description("hand messages to a running workflow's inlet source; returns once they are accepted")
    .argument('<workflow>', 'stored name, or the workflow name when only one has it')
    .requiredOption('--inlet <name>', 'the inlet source component instance')
    .option('--body <json>', 'the message body, a JSON object', jsonObject('--body'))
    .option('--id <id>', 'with --body: message id for de-duplication (generated when absent)', '')
    .option(
      '--file <messages.jsonl>',
      'publish every line of a JSON Lines file (one body object per line), in batches; publishing the same file again publishes nothing twice',
    )
    .action((workflowName: string, options: { inlet: string; body?: Record<string, unknown>[]; id: string; file?: string }, command: Command) =>
      withExecutor(command, async (client, globals) => {
        if ((options.body === undefined) === (options.file === undefined)) throw new UsageError('give exactly one of --body and --file');
        if (options.file !== undefined) {
          const { publishFile } = await import('../publish-file.js');
          const outcome = await publishFile(client, {
            workflowName,
            inlet: options.inlet,
            file: inputPath(options.file),
            progress: cliIo().stderr.isTTY === true ? cliIo().stderr : undefined,
          });
          printTable(globals.output, [{ file: options.file, accepted: outcome.accepted, duplicate: outcome.duplicate, refused: outcome.refused.length }]);
          for (const refusal of outcome.refused.slice(0, 10)) cliIo().stderr.write(`loom: ${options.file}:${refusal.line}: ${refusal.message}\n`);
          if (outcome.refused.length > 0) setExitCode(1);
          return;
        }
        const published = await call(client, 'publishMessage', {
          workflowName,
          inlet: options.inlet,
          body: options.body?.at(-1),
          headers: {},
          messageId: options.id,
        });
        printTable(globals.output, [{ messageId: published.messageId, duplicate: published.duplicate }]);
      }),
    );
  addMessageTraceCommand(message);
  return { component };
}
