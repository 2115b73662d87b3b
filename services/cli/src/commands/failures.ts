import { ExecutorClient, type FailedMessage, type FailedMessageFilter } from '@loom/contracts';
import { call } from '@loom/service-kit/client';
import { type Command, InvalidArgumentError } from 'commander';
import { cliIo } from '../cli-io.js';
import { printTable } from '../output.js';
import { withClient } from '../service-client.js';
import { UsageError } from '../usage-error.js';

const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** A duration as `--since` takes it (`90s`, `30m`, `2h`, `1d`; a plain number is seconds), in ms. */
function parseSince(value: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(value.trim());
  if (match === null) throw new InvalidArgumentError('expected a duration such as 90s, 30m, 2h or 1d');
  const ms = Math.round(Number(match[1]) * UNIT_MS[match[2] ?? 's']!);
  if (ms <= 0) throw new InvalidArgumentError('expected a duration above 0');
  return ms;
}

/** The filter options every `loom failures` command takes. */
interface FilterOptions {
  readonly component?: string;
  readonly kind?: string;
  readonly since?: number;
}

function parsePageSize(value: string): number {
  const size = Number(value);
  if (!Number.isSafeInteger(size) || size < 1 || size > 1000) throw new InvalidArgumentError('expected a number from 1 to 1000');
  return size;
}

function withFilterOptions(command: Command): Command {
  return command
    .option('--component <name>', 'only the messages this component failed')
    .option('--kind <kind>', 'only failures of this error kind (invalid-argument, unavailable, ...)')
    .option('--since <duration>', 'only those that last failed within this time (90s, 30m, 2h, 1d)', parseSince);
}

function filterOf(workflow: string, options: FilterOptions): FailedMessageFilter {
  return {
    workflow,
    component: options.component ?? '',
    kind: options.kind ?? '',
    since: options.since === undefined ? undefined : new Date(Date.now() - options.since),
    until: undefined,
  };
}

/** A failed message as JSON prints it: its body as the JSON object it is. */
function jsonOf(message: FailedMessage): unknown {
  return { ...message, firstFailed: message.firstFailed?.toISOString(), lastFailed: message.lastFailed?.toISOString() };
}

/** `loom failures list|show|retry|discard`: the failure store of a workflow (issue 50). */
export function addFailuresCommands(program: Command): void {
  const failures = program
    .command('failures')
    .description('messages that failed for good (past max_retry with no failure handler, or refused as invalid): list, show, retry after a fix, discard');

  withFilterOptions(
    failures
      .command('list')
      .description('the failed messages of a workflow, newest first, with the counts by error kind')
      .argument('<workflow>', 'stored name, or the workflow name when only one has it'),
  )
    .option('--limit <n>', 'how many to print (1 to 1000)', parsePageSize, 100)
    .option('--page-token <token>', 'the next page, as a previous list printed it')
    .action((workflow: string, options: FilterOptions & { limit: number; pageToken?: string }, command: Command) =>
      withClient(command, ExecutorClient, async (client, globals) => {
        const page = await call(client, 'listFailedMessages', {
          filter: filterOf(workflow, options),
          pageSize: options.limit,
          pageToken: options.pageToken ?? '',
        });
        if (globals.output === 'json') {
          printTable('json', [], { ...page, messages: page.messages.map(jsonOf) });
          return;
        }
        const { stdout } = cliIo();
        const kinds = Object.entries(page.countsByKind)
          .map(([kind, count]) => `${kind} ${count}`)
          .join(', ');
        stdout.write(`${page.total} failed messages in '${workflow}'${kinds === '' ? '' : ` (${kinds})`}\n`);
        printTable(
          'text',
          page.messages.map((message) => ({
            id: message.id,
            component: message.component,
            kind: message.failure?.kind ?? '',
            attempts: message.attempts,
            lastFailed: message.lastFailed?.toISOString() ?? '',
            messageId: message.messageId,
            error: (message.failure?.message ?? '').slice(0, 80),
          })),
        );
        if (page.nextPageToken !== '') stdout.write(`more: loom failures list ${workflow} --page-token ${page.nextPageToken}\n`);
      }),
    );

  failures
    .command('show')
    .description('one failed message: its failure, attempts and times, and its body and headers to a role that may read message content')
    .argument('<workflow>', 'stored name, or the workflow name when only one has it')
    .argument('<id>', 'the id `loom failures list` printed')
    .action((workflow: string, id: string, _options: object, command: Command) =>
      withClient(command, ExecutorClient, async (client, globals) => {
        const { message } = await call(client, 'getFailedMessage', { workflow, id });
        if (message === undefined) return;
        if (globals.output === 'json') {
          printTable('json', [], jsonOf(message));
          return;
        }
        const failure = message.failure;
        const lines = [
          `id:            ${message.id}`,
          `workflow:      ${message.workflow} (version ${message.workflowVersion})`,
          `component:     ${message.component}`,
          `failure:       ${failure?.kind ?? ''}${failure?.retryable === true ? ' (retryable)' : ''}: ${failure?.message ?? ''}`,
          ...(failure?.cause ? [`cause:         ${failure.cause}`] : []),
          `attempts:      ${message.attempts}`,
          `first failed:  ${message.firstFailed?.toISOString() ?? ''}`,
          `last failed:   ${message.lastFailed?.toISOString() ?? ''}`,
          `message id:    ${message.messageId}`,
          ...(message.traceId === '' ? [] : [`trace id:      ${message.traceId}`]),
          message.message !== undefined
            ? `headers:       ${JSON.stringify(message.message.headers)}\nbody:          ${JSON.stringify(message.message.body)}`
            : message.contentKept
              ? 'body:          (kept; your role may not read message content)'
              : 'body:          (not kept: the component has store_error_content false)',
        ];
        cliIo().stdout.write(`${lines.join('\n')}\n`);
      }),
    );

  for (const verb of ['retry', 'discard'] as const) {
    withFilterOptions(
      failures
        .command(verb)
        .description(
          verb === 'retry'
            ? "send failed messages again, each at the component that failed it, in the workflow's running version (audited; operator role)"
            : 'remove failed messages from the store for good (audited; operator role)',
        )
        .argument('<workflow>', 'stored name, or the workflow name when only one has it')
        .argument('[ids...]', 'the ids `loom failures list` printed; or a filter, or --all'),
    )
      .option('--all', 'every failed message of the workflow (with a filter: every one matching it)', false)
      .action((workflow: string, ids: string[], options: FilterOptions & { all: boolean }, command: Command) => {
        const filtered = options.component !== undefined || options.kind !== undefined || options.since !== undefined;
        if (ids.length === 0 && !filtered && !options.all) throw new UsageError(`name the failed messages to ${verb}, or give a filter, or --all`);
        if (ids.length > 0 && (filtered || options.all)) throw new UsageError('give ids, or a filter (or --all), not both');
        return withClient(command, ExecutorClient, async (client, globals) => {
          const request = { ids, filter: filterOf(workflow, options), all: options.all };
          const count =
            verb === 'retry' ? (await call(client, 'retryFailedMessages', request)).retried : (await call(client, 'discardFailedMessages', request)).discarded;
          if (globals.output === 'json') {
            printTable('json', [], { workflow, [verb === 'retry' ? 'retried' : 'discarded']: count });
            return;
          }
          cliIo().stdout.write(
            verb === 'retry' ? `retried ${count} failed messages of '${workflow}'\n` : `discarded ${count} failed messages of '${workflow}'\n`,
          );
        });
      });
  }
}
