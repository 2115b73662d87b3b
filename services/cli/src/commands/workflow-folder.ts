import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { status as grpcStatus } from '@grpc/grpc-js';
import { ApplyAction, type ApplyPlanEntry, type ApplyScheduleFile, type ApplyWorkflowFile, WorkflowStoreClient, type WorkflowSummary } from '@loom/contracts';
import {
  isSealed,
  parseScheduleJson,
  parseStoredName,
  serializeCompactWorkflow,
  serializeScheduleJson,
  serializeWorkflowJson,
  withVariableReferences,
} from '@loom/domain';
import { scheduleFromProto, scheduleToProto, workflowFromProto } from '@loom/domain/proto';
import { call } from '@loom/service-kit/client';
import { type Command } from 'commander';
import { cliIo, inputPath, setExitCode } from '../cli-io.js';
import { type GlobalOptions } from '../global-options.js';
import { printTable } from '../output.js';
import { pages } from '../paging.js';
import { withClient } from '../service-client.js';
import { UsageError } from '../usage-error.js';

/** Workflow files of a folder: `<name>.workflow.yaml`, `.workflow.yml`, `.workflow.json`. */
const WORKFLOW_FILE = /\.workflow\.(ya?ml|json)$/i;
/** Schedule files of a folder: `<workflow name>.scheduler.json`, as the config store keeps them. */
const SCHEDULE_FILE = /\.scheduler\.json$/i;

interface ExportAllOptions {
  readonly compact: boolean;
  readonly format?: 'yaml' | 'json';
}

/** The name a workflow is written under in a folder: its plain name when no other stored workflow has it, else the stored name. */
function folderNames(workflows: readonly WorkflowSummary[]): Map<string, string> {
  const bases = new Map<string, number>();
  const baseOf = (name: string): string => parseStoredName(name)?.base ?? name;
  for (const { name } of workflows) bases.set(baseOf(name), (bases.get(baseOf(name)) ?? 0) + 1);
  return new Map(workflows.map(({ name }) => [name, bases.get(baseOf(name)) === 1 ? baseOf(name) : name]));
}

/**
 * `loom workflow export --all DIR`: one file per stored workflow (and one per schedule) with `$$` references where
 * they were pushed and never a secret value; a value sealed at push without a reference is written as a `$$` reference
 * to a variable named after the workflow and the slot, told on standard error.
 */
export async function exportAll(command: Command, directory: string, options: ExportAllOptions): Promise<void> {
  await withClient(command, WorkflowStoreClient, async (client, globals: GlobalOptions) => {
    const listed: WorkflowSummary[] = [];
    for await (const page of pages((request) => call(client, 'listWorkflows', request))) listed.push(...page.workflows);
    const { stderr } = cliIo();
    const valid = listed.filter((summary) => {
      if (!summary.valid) stderr.write(`loom: ${summary.name} is not exported: its stored file is invalid (${summary.invalidReason})\n`);
      return summary.valid;
    });
    const names = folderNames(valid);
    const folder = inputPath(directory);
    mkdirSync(folder, { recursive: true });
    const extension = options.compact ? (options.format === 'json' ? 'json' : 'yaml') : 'json';
    const written: Record<string, string | number>[] = [];
    for (const summary of valid) {
      const { workflow: stored, variableReferences } = await call(client, 'getWorkflow', { name: summary.name });
      if (stored === undefined) continue;
      const fileName = names.get(summary.name) ?? summary.name;
      const { workflow, unreferenced } = withVariableReferences(
        workflowFromProto(stored),
        variableReferences,
        parseStoredName(summary.name)?.base ?? summary.name,
      );
      const named = { ...workflow, name: fileName };
      const text = options.compact ? serializeCompactWorkflow(named, options.format ?? 'yaml') : serializeWorkflowJson(named);
      // withVariableReferences leaves no sealed value; checked once more, since a file in git is forever
      if (text.includes('###AES-') || isSealed(text)) throw new UsageError(`${summary.name}: a sealed value is left in its export; nothing more was written`);
      writeFileSync(join(folder, `${fileName}.workflow.${extension}`), text);
      for (const { path, variable } of unreferenced) {
        stderr.write(`loom: ${fileName}: ${path} was sealed at push, not a $$ reference; written as $$${variable}: create that variable in each environment\n`);
      }
      let schedule = '';
      try {
        const answer = await call(client, 'getSchedule', { workflowName: summary.name });
        if (answer.schedule !== undefined) {
          writeFileSync(join(folder, `${fileName}.scheduler.json`), serializeScheduleJson(scheduleFromProto(answer.schedule)));
          schedule = `${fileName}.scheduler.json`;
        }
      } catch (error) {
        const code = (error as { code?: number }).code;
        // no schedule; or a schedule file the store cannot read, which is told and not written
        if (code === grpcStatus.FAILED_PRECONDITION)
          stderr.write(`loom: ${fileName}: schedule not exported: ${(error as { details?: string }).details ?? ''}\n`);
        else if (code !== grpcStatus.NOT_FOUND) throw error;
      }
      written.push({ name: summary.name, file: `${fileName}.workflow.${extension}`, schedule: schedule === '' ? '-' : schedule, version: summary.version });
    }
    const writtenFiles = new Set(written.flatMap((row) => [String(row.file), String(row.schedule)]));
    for (const stale of readdirSync(folder).filter((file) => (WORKFLOW_FILE.test(file) || SCHEDULE_FILE.test(file)) && !writtenFiles.has(file))) {
      stderr.write(`loom: ${stale} names no stored workflow; left as it is (delete it, or apply the folder with --prune to remove workflows)\n`);
    }
    printTable(globals.output, written, written);
  });
}

/** The workflow and schedule files of a folder, read; a schedule file that does not parse is listed with every other one. */
function readFolder(directory: string): { workflows: ApplyWorkflowFile[]; schedules: ApplyScheduleFile[] } {
  const folder = inputPath(directory);
  let files: string[];
  try {
    files = readdirSync(folder).sort();
  } catch (error) {
    throw new UsageError(`cannot read the folder ${directory}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
  const workflows = files.filter((file) => WORKFLOW_FILE.test(file)).map((file) => ({ sourceName: file, text: readFileSync(join(folder, file), 'utf8') }));
  const problems: string[] = [];
  const schedules = files
    .filter((file) => SCHEDULE_FILE.test(file))
    .flatMap((file) => {
      try {
        const schedule = parseScheduleJson(readFileSync(join(folder, file), 'utf8'));
        return [{ sourceName: file, workflowName: file.replace(SCHEDULE_FILE, ''), schedule: scheduleToProto(schedule) }];
      } catch (error) {
        problems.push(`${file}: ${error instanceof Error ? error.message : String(error)}`);
        return [];
      }
    });
  if (problems.length > 0) throw new UsageError(`nothing applied; the folder's schedule files are invalid:\n  ${problems.join('\n  ')}`);
  if (workflows.length === 0 && schedules.length === 0) throw new UsageError(`${directory} holds no *.workflow.yaml, *.workflow.json or *.scheduler.json file`);
  return { workflows, schedules };
}

const ACTION_NAMES: Readonly<Record<number, string>> = {
  [ApplyAction.APPLY_ACTION_ADDED]: 'added',
  [ApplyAction.APPLY_ACTION_CHANGED]: 'changed',
  [ApplyAction.APPLY_ACTION_UNCHANGED]: 'unchanged',
  [ApplyAction.APPLY_ACTION_REMOVED]: 'removed',
};

function planRow(entry: ApplyPlanEntry): Record<string, string | number> {
  const action = ACTION_NAMES[entry.action] ?? 'unknown';
  const schedule = ACTION_NAMES[entry.scheduleAction] ?? '-';
  const changes = entry.action === ApplyAction.APPLY_ACTION_CHANGED ? `+${entry.linesAdded} -${entry.linesRemoved}` : '';
  return { action, file: entry.sourceName === '' ? '-' : entry.sourceName, workflow: entry.name, changes, schedule };
}

/** Whether applying the plan would change anything. */
function drifted(entries: readonly ApplyPlanEntry[]): boolean {
  return entries.some(
    (entry) =>
      entry.action !== ApplyAction.APPLY_ACTION_UNCHANGED ||
      (entry.scheduleAction !== ApplyAction.APPLY_ACTION_UNSPECIFIED && entry.scheduleAction !== ApplyAction.APPLY_ACTION_UNCHANGED),
  );
}

interface ApplyOptions {
  readonly yes: boolean;
  readonly prune: boolean;
  readonly check: boolean;
  readonly diff: boolean;
}

/** `loom workflow apply DIR`: the plan, then with --yes the changes (all or nothing), with --check exit 1 on drift. */
export function addApplyCommand(workflow: Command): void {
  workflow
    .command('apply')
    .description(
      "make the stored workflows match a folder's files (*.workflow.yaml|json, *.scheduler.json): prints the plan; --yes applies it, all or nothing; --check exits 1 on drift",
    )
    .argument('<dir>', 'the folder, e.g. one written by loom workflow export --all --compact')
    .option('--yes', 'apply the plan (every file is checked and every changed workflow sealed before any is written)', false)
    .option('--prune', 'also remove stored workflows no file names', false)
    .option('--check', 'apply nothing; exit 1 when the store differs from the folder (for CI)', false)
    .option('--diff', "print each changed workflow's diff of the compact forms", false)
    .action((directory: string, options: ApplyOptions, command: Command) =>
      withClient(command, WorkflowStoreClient, async (client, globals: GlobalOptions) => {
        if (options.check && options.yes) throw new UsageError('--check applies nothing: give --check or --yes, not both');
        const folder = readFolder(directory);
        // the plan alone needs only the read permission: a CI job's --check runs with a viewer's token
        const answer = options.yes
          ? await call(client, 'applyWorkflows', { ...folder, prune: options.prune, apply: true })
          : { ...(await call(client, 'planWorkflows', { ...folder, prune: options.prune })), applied: false };
        const rows = answer.entries.map(planRow);
        if (globals.output === 'json') printTable('json', [], answer);
        else {
          printTable('text', rows);
          if (options.diff) for (const entry of answer.entries) if (entry.diff !== '') cliIo().stdout.write(entry.diff);
          const verb = options.yes ? (answer.applied ? 'applied' : 'nothing to apply: the store matches the folder') : 'plan only: nothing applied';
          const hint = !options.yes && !options.check && drifted(answer.entries) ? ' (run again with --yes to apply it)' : '';
          cliIo().stdout.write(`${verb}${hint}\n`);
        }
        if (options.check && drifted(answer.entries)) setExitCode(1);
      }),
    );
}
