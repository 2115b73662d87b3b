import { readFileSync } from 'node:fs';
import { type Command } from 'commander';
import { SecretsClient, type Variable } from '@loom/contracts';
import { call } from '@loom/service-kit/client';
import { type GlobalOptions } from '../global-options.js';
import { printTable } from '../output.js';
import { pages } from '../paging.js';
import { UsageError } from '../usage-error.js';
import { withClient } from '../service-client.js';
import { cliIo, inputPath } from '../cli-io.js';

function withSecrets<T>(command: Command, use: (client: SecretsClient, globals: GlobalOptions) => Promise<T>): Promise<T> {
  return withClient(command, SecretsClient, use);
}

function row(variable: Variable): Record<string, string | boolean> {
  return {
    key: variable.key,
    encrypted: variable.encrypted,
    value: variable.encrypted ? `${variable.value.slice(0, 24)}…` : variable.value,
    updated: variable.updatedAt?.toISOString() ?? '',
  };
}

/** The value of `variable create/update`: --value, --value-file, or standard input. */
function readValue(options: { value?: string; valueFile?: string }): string {
  if (options.value !== undefined && options.valueFile !== undefined) throw new UsageError('give --value or --value-file, not both');
  if (options.value !== undefined) return options.value;
  const fromStdin = options.valueFile === undefined || options.valueFile === '-';
  const { stdin } = cliIo();
  if (fromStdin && stdin.isTTY) throw new UsageError('give the value with --value, --value-file FILE, or on standard input (a pipe)');
  return (fromStdin ? stdin.readText() : readFileSync(inputPath(options.valueFile as string), 'utf8')).replace(/\r?\n$/, '');
}

/** `loom variable …` and `loom secrets …`. */
export function addSecretsCommands(program: Command): void {
  const variable = program.command('variable').description('ecosystem variables (values a workflow refers to as $$NAME)');

  variable
    .command('create')
    .description('create a variable; the value comes from --value, --value-file or standard input')
    .argument('<key>', 'variable name')
    .option('--value <value>', 'the value (visible in shell history; prefer --value-file or stdin for secrets)')
    .option('--value-file <file>', 'read the value from a file (- for standard input)')
    .option('--encrypted', 'store the value encrypted (AES-256-GCM)', false)
    .option('--user <uuid>', "the acting user's UUID", cliIo().env.LOOM_USER_UUID ?? '')
    .action((key: string, options: { value?: string; valueFile?: string; encrypted: boolean; user: string }, command: Command) =>
      withSecrets(command, async (client, globals) => {
        const { variable: created } = await call(client, 'createVariable', {
          key,
          value: readValue(options),
          encrypted: options.encrypted,
          userUuid: options.user,
        });
        if (created !== undefined) printTable(globals.output, [row(created)], created);
      }),
    );

  variable
    .command('update')
    .description("replace a variable's value or encryption")
    .argument('<key>', 'variable name')
    .option('--value <value>', 'the new value')
    .option('--value-file <file>', 'read the new value from a file (- for standard input)')
    .option('--encrypted', 'store encrypted')
    .option('--no-encrypted', 'store in clear (needs a new value)')
    .option('--user <uuid>', "the acting user's UUID", cliIo().env.LOOM_USER_UUID ?? '')
    .action((key: string, options: { value?: string; valueFile?: string; encrypted?: boolean; user: string }, command: Command) =>
      withSecrets(command, async (client, globals) => {
        const value = options.value === undefined && options.valueFile === undefined ? undefined : readValue(options);
        const { variable: updated } = await call(client, 'updateVariable', {
          key,
          userUuid: options.user,
          ...(value === undefined ? {} : { value }),
          ...(options.encrypted === undefined ? {} : { encrypted: options.encrypted }),
        });
        if (updated !== undefined) printTable(globals.output, [row(updated)], updated);
      }),
    );

  variable
    .command('list')
    .description('list variables (encrypted values only as their ###AES- text)')
    .action((_options: object, command: Command) =>
      withSecrets(command, async (client, globals) => {
        const variables: Variable[] = [];
        for await (const page of pages((request) => call(client, 'listVariables', request))) variables.push(...page.variables);
        printTable(globals.output, variables.map(row), variables);
      }),
    );

  variable
    .command('get')
    .description('show one variable')
    .argument('<key>', 'variable name')
    .action((key: string, _options: object, command: Command) =>
      withSecrets(command, async (client, globals) => {
        const { variable: found } = await call(client, 'getVariable', { key });
        if (found !== undefined) printTable(globals.output, [{ ...row(found), value: found.value }], found);
      }),
    );

  variable
    .command('delete')
    .description('delete a variable')
    .argument('<key>', 'variable name')
    .action((key: string, _options: object, command: Command) =>
      withSecrets(command, async (client, globals) => {
        await call(client, 'deleteVariable', { key });
        printTable(globals.output, [{ deleted: key }], { deleted: key });
      }),
    );

  program
    .command('secrets')
    .description('the encryption key ring')
    .command('rotate')
    .description('make a new key active, re-encrypt every encrypted variable and re-seal every stored workflow with it')
    .option('--key-id <id>', 'a configured key (loom.secrets.keys.<id>) to make active; default: generate one')
    .action((options: { keyId?: string }, command: Command) =>
      withSecrets(command, async (client, globals) => {
        const result = await call(client, 'rotateKey', { keyId: options.keyId ?? '' });
        printTable(
          globals.output,
          [
            {
              activeKeyId: result.activeKeyId,
              variablesReencrypted: result.variablesReencrypted,
              workflowsResealed: result.workflowsReencrypted,
              workflowsLeft: result.workflowsLeft.join('; '),
            },
          ],
          result,
        );
      }),
    );
}
