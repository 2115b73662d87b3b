import { statSync, writeFileSync } from 'node:fs';
import { basename } from 'node:path';
import { ExecutorClient, WorkflowStoreClient, type WorkflowSummary } from '@loom/contracts';
import {
  CATCH_UP_POLICIES,
  type CatchUpPolicyName,
  OVERLAP_POLICIES,
  type OverlapPolicyName,
  serializeScheduleJson,
  serializeWorkflowJson,
  type WorkflowConfiguration,
} from '@loom/domain';
import { scheduleFromProto, scheduleToProto, workflowFromProto } from '@loom/domain/proto';
import { call } from '@loom/service-kit/client';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { type GlobalOptions } from '../global-options.js';
import { printTable } from '../output.js';
import { pages } from '../paging.js';
import { withClient } from '../service-client.js';
import { renderSvg } from '../graphviz.js';
import { type ComponentCounts, type PictureFormat, workflowPicture } from '../workflow-picture.js';
import { readWorkflowFile, readWorkflowFileText } from '../workflow-file.js';
import { UsageError } from '../usage-error.js';
import { cliIo, inputPath } from '../cli-io.js';
import { addApplyCommand } from './workflow-folder.js';
import { addWorkflowVersionCommands, parseKeptVersion } from './workflow-versions.js';

function withStore<T>(command: Command, use: (client: WorkflowStoreClient, globals: GlobalOptions) => Promise<T>): Promise<T> {
  return withClient(command, WorkflowStoreClient, use);
}

function parseVersion(value: string): number {
  const version = Number(value);
  if (!Number.isSafeInteger(version) || version < 0) throw new InvalidArgumentError('expected a version number (0: must not exist yet).');
  return version;
}

function summaryRow(summary: WorkflowSummary): Record<string, string | number | boolean> {
  return { name: summary.name, version: summary.version, autoStart: summary.autoStart, valid: summary.valid ? 'yes' : `no: ${summary.invalidReason}` };
}

/** `loom workflow push|list|get|delete|show` and `loom schedule set|get`; returns the `workflow` and `schedule` commands for the other services' verbs. */
export function addWorkflowCommands(program: Command): { workflow: Command; schedule: Command } {
  const workflow = program.command('workflow').description('workflow configurations kept by the config store');

  workflow
    .command('push')
    .description(
      'validate, seal and store a workflow file (full .workflow.json or compact YAML/JSON); prints its stored name, uuid, version, and whether it was stored or unchanged',
    )
    .argument('<file>', 'a .workflow.json file, or a compact .workflow.yaml (or .json) file')
    .option('--expected-version <n>', 'store only if the stored version is this one (0: only if new)', parseVersion)
    .action((file: string, options: { expectedVersion?: number }, command: Command) =>
      withStore(command, async (client, globals) => {
        // the text as it is: the config store reads either form and checks it as for any other caller (one home for the
        // rules), its errors naming the file's fields and lines; a file identical to the stored version is not stored again
        const request = { compact: readWorkflowFileText(file), sourceName: basename(file), expectedVersion: options.expectedVersion };
        const { summary, metadata, unchanged } = await call(client, 'putWorkflow', request);
        if (summary === undefined) return;
        const row = { name: summary.name, uuid: summary.uuid, version: summary.version, status: unchanged ? 'unchanged' : 'stored' };
        printTable(globals.output, [row], { summary, metadata, unchanged });
      }),
    );

  workflow
    .command('list')
    .description('list stored workflows, with the reason of any that is invalid')
    .action((_options: object, command: Command) =>
      withStore(command, async (client, globals) => {
        const workflows: WorkflowSummary[] = [];
        for await (const page of pages((request) => call(client, 'listWorkflows', request))) workflows.push(...page.workflows);
        printTable(globals.output, workflows.map(summaryRow), workflows);
      }),
    );

  workflow
    .command('get')
    .description('print a stored workflow as its .workflow.json file (secrets stay sealed)')
    .argument('<name>', 'stored name <workflow_name>_<uuid>, or the workflow name when only one has it')
    .option('--version <n>', 'a kept version (loom workflow history lists them) instead of the current one', parseKeptVersion)
    .action((name: string, options: { version?: number }, command: Command) =>
      withStore(command, async (client, globals) => {
        const { workflow: stored, metadata } = await call(client, 'getWorkflow', { name, version: options.version });
        if (stored === undefined) return;
        const text = serializeWorkflowJson(workflowFromProto(stored));
        if (globals.output === 'json') cliIo().stdout.write(`${JSON.stringify({ metadata, workflow: JSON.parse(text) as unknown }, null, 2)}\n`);
        else cliIo().stdout.write(text);
      }),
    );

  workflow
    .command('delete')
    .description('delete a stored workflow and its metadata and schedule files')
    .argument('<name>', 'stored name, or the workflow name when only one has it')
    .option('--expected-version <n>', 'delete only if the stored version is this one', parseVersion)
    .action((name: string, options: { expectedVersion?: number }, command: Command) =>
      withStore(command, async (client, globals) => {
        await call(client, 'deleteWorkflow', { name, expectedVersion: options.expectedVersion });
        printTable(globals.output, [{ deleted: name }], { deleted: name });
      }),
    );

  addShowCommand(workflow);
  addWorkflowVersionCommands(workflow);
  addApplyCommand(workflow);

  const schedule = program.command('schedule').description('cron schedules of workflows');

  schedule
    .command('set')
    .description("store a workflow's schedule (six-field cron, seconds first)")
    .argument('<name>', 'stored name, or the workflow name when only one has it')
    .requiredOption('--cron <expression>', "e.g. '0 */5 * * * *'")
    .requiredOption('--timezone <zone>', 'IANA time zone, e.g. Europe/Berlin')
    .addOption(new Option('--overlap <policy>', 'when the previous run still goes').choices(OVERLAP_POLICIES).default('SKIP'))
    .addOption(new Option('--catch-up <policy>', 'fires missed while loom was down').choices(CATCH_UP_POLICIES).default('NONE'))
    .option('--disabled', 'store it switched off', false)
    .action(
      (
        name: string,
        options: { cron: string; timezone: string; overlap: OverlapPolicyName; catchUp: CatchUpPolicyName; disabled: boolean },
        command: Command,
      ) =>
        withStore(command, async (client, globals) => {
          const { schedule: stored } = await call(client, 'putSchedule', {
            workflowName: name,
            schedule: scheduleToProto({
              enabled: !options.disabled,
              cron: options.cron,
              timezone: options.timezone,
              overlap: options.overlap,
              catchUp: options.catchUp,
            }),
          });
          if (stored === undefined) return;
          const shown = scheduleFromProto(stored);
          printTable(globals.output, [{ workflow: name, ...shown }], shown);
        }),
    );

  schedule
    .command('get')
    .description("print a workflow's schedule as its .scheduler.json file")
    .argument('<name>', 'stored name, or the workflow name when only one has it')
    .action((name: string, _options: object, command: Command) =>
      withStore(command, async (client) => {
        const { schedule: stored } = await call(client, 'getSchedule', { workflowName: name });
        if (stored !== undefined) cliIo().stdout.write(serializeScheduleJson(scheduleFromProto(stored)));
      }),
    );
  return { workflow, schedule };
}

/** Whether a command-line argument names a file (rather than a stored workflow). */
function isFile(path: string): boolean {
  try {
    return statSync(inputPath(path)).isFile();
  } catch {
    return false;
  }
}

interface ShowOptions {
  readonly format: PictureFormat | 'svg';
  readonly out?: string;
  readonly status?: boolean;
}

/** `loom workflow show NAME|FILE`: the workflow drawn as Mermaid, DOT or SVG, with its run's counters on --status. */
function addShowCommand(workflow: Command): void {
  workflow
    .command('show')
    .description('draw a workflow (a stored one, or a workflow file in the full or the compact form): Mermaid, Graphviz DOT, or SVG when Graphviz is installed')
    .argument('<name|file>', 'a workflow file (.workflow.json, .workflow.yaml), or a stored name (the workflow name when only one has it)')
    .addOption(new Option('--format <format>', 'mermaid, dot, or svg (needs Graphviz and --out)').choices(['mermaid', 'dot', 'svg']).default('mermaid'))
    .option('--out <file>', 'write the picture to this file instead of printing it')
    .option('--status', "put each component's counters from the running workflow in its box")
    .action(async (target: string, options: ShowOptions, command: Command) => {
      if (options.format === 'svg' && options.out === undefined) throw new UsageError('--format svg writes a file: give it with --out <file>');
      const shown = isFile(target)
        ? readWorkflowFile(target).workflow
        : await withStore(command, async (client) => {
            const { workflow: stored } = await call(client, 'getWorkflow', { name: target });
            if (stored === undefined) throw new UsageError(`the config store gave no workflow for '${target}'`);
            return workflowFromProto(stored);
          });
      const counts = options.status === true ? await runCounts(command, shown) : undefined;
      const text = workflowPicture(shown, options.format === 'svg' ? 'dot' : options.format, counts);
      const picture = options.format === 'svg' ? await renderSvg(text) : text;
      if (options.out === undefined) cliIo().stdout.write(picture);
      else writeFileSync(inputPath(options.out), picture);
    });
}

/** Each component's counters from the executor's run of the workflow, by component name. */
function runCounts(command: Command, shown: WorkflowConfiguration): Promise<Map<string, ComponentCounts>> {
  return withClient(command, ExecutorClient, async (client) => {
    const { components } = await call(client, 'getWorkflowStatus', { name: shown.name });
    return new Map(components.map((component) => [component.name, component]));
  });
}
