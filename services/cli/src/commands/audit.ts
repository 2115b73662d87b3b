import { AuditClient, type AuditEvent, AuditEventType, type WatchResponse } from '@loom/contracts';
import { call } from '@loom/service-kit/client';
import { type Command, InvalidArgumentError } from 'commander';
import { type GlobalOptions } from '../global-options.js';
import { pages } from '../paging.js';
import { withClient } from '../service-client.js';
import { cliIo, inThisRun, setExitCode } from '../cli-io.js';

const PREFIX = 'AUDIT_EVENT_TYPE_';

function parseType(value: string): AuditEventType {
  const type = AuditEventType[`${PREFIX}${value.toUpperCase()}` as keyof typeof AuditEventType];
  if (type === undefined || type === AuditEventType.AUDIT_EVENT_TYPE_UNSPECIFIED) {
    const names = Object.keys(AuditEventType)
      .filter((name) => name.startsWith(PREFIX) && !name.endsWith('UNSPECIFIED'))
      .map((name) => name.slice(PREFIX.length));
    throw new InvalidArgumentError(`expected one of ${names.join(', ')}.`);
  }
  return type;
}

function parseCount(value: string): number {
  const count = Number(value);
  if (!Number.isSafeInteger(count) || count < 1) throw new InvalidArgumentError('expected a positive number.');
  return count;
}

/** One event per line: sequence, time, type, then the fields that are set. */
function print(globals: GlobalOptions, event: AuditEvent): void {
  if (globals.output === 'json') {
    cliIo().stdout.write(`${JSON.stringify({ ...event, type: AuditEventType[event.type].slice(PREFIX.length) })}\n`);
    return;
  }
  const fields = [
    ['workflow', event.workflowName],
    ['component', event.componentName],
    ['componentType', event.componentType],
    ['reason', event.reason],
    ['actor', event.actor],
  ].filter(([, value]) => value !== '');
  const text = fields.map(([name, value]) => `${name}=${JSON.stringify(value)}`).join(' ');
  cliIo().stdout.write(`${event.sequence}  ${event.time?.toISOString() ?? ''}  ${AuditEventType[event.type].slice(PREFIX.length)}  ${text}\n`);
}

/** `loom audit tail` and `loom audit verify`. */
export function addAuditCommands(program: Command): void {
  const audit = program.command('audit').description('the audit log of privileged actions');

  audit
    .command('tail')
    .description('print the last audit events; with -f, keep printing new ones')
    .option('-f, --follow', 'keep printing events as they are written', false)
    .option('--type <type>', 'only events of this type (repeatable)', (value: string, previous: AuditEventType[]) => [...previous, parseType(value)], [])
    .option('--workflow <name>', 'only events of this workflow', '')
    .option('-n, --lines <count>', 'how many past events to print', parseCount, 20)
    .action((options: { follow: boolean; type: AuditEventType[]; workflow: string; lines: number }, command: Command) =>
      withClient(command, AuditClient, async (client, globals) => {
        const last: AuditEvent[] = [];
        const query = { types: options.type, workflowName: options.workflow, since: undefined, until: undefined };
        for await (const page of pages((request) => call(client, 'query', { ...query, ...request }))) {
          last.push(...page.events);
          last.splice(0, Math.max(0, last.length - options.lines));
        }
        for (const event of last) print(globals, event);
        if (!options.follow) return;
        const fromSequence = (last.at(-1)?.sequence ?? 0) + 1;
        const stream = client.watch({ types: options.type, workflowName: options.workflow, fromSequence });
        await new Promise<void>((resolve, reject) => {
          stream.on(
            'data',
            inThisRun((response: WatchResponse) => {
              if (response.event !== undefined) print(globals, response.event);
            }),
          );
          stream.on('error', reject);
          stream.on('end', resolve);
          process.once('SIGINT', () => {
            stream.cancel();
            resolve();
          });
        });
      }),
    );

  audit
    .command('verify')
    .description('walk the hash chain; exit 1 and name the first broken sequence number if it is broken')
    .action((_options: object, command: Command) =>
      withClient(command, AuditClient, async (client, globals) => {
        const verdict = await call(client, 'verify', {});
        if (globals.output === 'json') cliIo().stdout.write(`${JSON.stringify(verdict, null, 2)}\n`);
        else if (verdict.ok) cliIo().stdout.write(`audit log intact: ${verdict.eventsChecked} events checked\n`);
        else
          cliIo().stdout.write(
            `audit log BROKEN at sequence ${verdict.firstBrokenSequence}: ${verdict.problem} (${verdict.eventsChecked} events before it are intact)\n`,
          );
        if (!verdict.ok) setExitCode(1);
      }),
    );
}
