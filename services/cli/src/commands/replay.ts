import { ExecutorClient } from '@loom/contracts';
import { call } from '@loom/service-kit/client';
import { type Command, InvalidArgumentError } from 'commander';
import { cliIo } from '../cli-io.js';
import { printTable } from '../output.js';
import { withClient } from '../service-client.js';
import { UsageError } from '../usage-error.js';

const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** A duration as `--since` takes it (`90s`, `30m`, `2h`, `1d`, `500ms`; a plain number is seconds), in ms. */
export function parseSince(value: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(value.trim());
  if (match === null) throw new InvalidArgumentError('expected a duration such as 90s, 30m, 2h or 1d');
  const ms = Math.round(Number(match[1]) * UNIT_MS[match[2] ?? 's']!);
  if (ms <= 0) throw new InvalidArgumentError('expected a duration above 0');
  return ms;
}

function parseSequence(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1) throw new InvalidArgumentError('expected a sequence number, 1 or more');
  return Number(value);
}

/** `loom workflow replay NAME --since 2h | --from-sequence N`: kept processed messages through the current version again (durable mode). */
export function addReplayCommand(workflow: Command): void {
  workflow
    .command('replay')
    .description(
      'send the processed messages a workflow kept (durable mode, loom.messaging.stream.keepProcessedMs) through its running version again; says how many it sent',
    )
    .argument('<name>', 'stored name, or the workflow name when only one has it')
    .option('--since <duration>', 'the messages processed within this time (90s, 30m, 2h, 1d)', parseSince)
    .option('--from-sequence <n>', "the messages from this sequence of the workflow's kept stream on (a replay prints the last it sent)", parseSequence)
    .action((name: string, options: { since?: number; fromSequence?: number }, command: Command) => {
      if ((options.since === undefined) === (options.fromSequence === undefined)) {
        throw new UsageError('give --since or --from-sequence, exactly one');
      }
      return withClient(command, ExecutorClient, async (client, globals) => {
        const result = await call(client, 'replayMessages', { workflow: name, sinceMs: options.since ?? 0, fromSequence: options.fromSequence ?? 0 });
        const row = { workflow: name, ...result };
        if (globals.output === 'json') {
          printTable('json', [], row);
          return;
        }
        const sequences = result.replayed + result.duplicates > 0 ? ` (kept sequences ${result.firstSequence} to ${result.lastSequence})` : '';
        const notes = [
          result.duplicates > 0 ? `${result.duplicates} already replayed within the duplicate window` : '',
          result.skipped > 0 ? `${result.skipped} of sources the workflow no longer has, not sent` : '',
        ].filter((note) => note !== '');
        cliIo().stdout.write(`replayed ${result.replayed} messages into '${name}'${sequences}${notes.length > 0 ? `; ${notes.join('; ')}` : ''}\n`);
      });
    });
}
