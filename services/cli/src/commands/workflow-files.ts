import { existsSync, writeFileSync } from 'node:fs';
import { basename } from 'node:path';
import { WorkflowStoreClient } from '@loom/contracts';
import {
  COMPONENT_KINDS,
  componentCatalog,
  componentKindName,
  findComponentDefinition,
  optionConstraint,
  scaffoldCompactWorkflow,
  serializeCompactWorkflow,
  serializeWorkflowJson,
  shortKindName,
  unknownKindDescription,
} from '@loom/domain';
import { workflowFromProto } from '@loom/domain/proto';
import { call } from '@loom/service-kit/client';
import { type Command, Option } from 'commander';
import { type GlobalOptions } from '../global-options.js';
import { printTable } from '../output.js';
import { withClient } from '../service-client.js';
import { UsageError } from '../usage-error.js';
import { cliIo, inputPath } from '../cli-io.js';
import { exportAll } from './workflow-folder.js';

/** The `$id` of the compact form's JSON Schema (libs/domain/schema/compact-workflow.schema.json); a scaffold's editor comment names it unless --schema says otherwise. */
const COMPACT_SCHEMA_URL = 'https://loom.dev/schema/compact-workflow.schema.json';

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** Writes a new file, refusing to replace one unless `force`. */
function writeNew(file: string, text: string, force: boolean): void {
  if (!force && existsSync(inputPath(file))) throw new UsageError(`${file} exists; give --force to replace it`);
  writeFileSync(inputPath(file), text);
}

/** The workflow name a file name suggests: `etl.workflow.yaml` → `etl`. */
function nameFromFile(file: string): string {
  return basename(file).replace(/(\.workflow)?\.(ya?ml|json)$/i, '');
}

/** The catalog's definition of a kind written short or in full; a usage error naming the kind otherwise. */
function definitionOf(kind: string): NonNullable<ReturnType<typeof findComponentDefinition>> {
  const definition = findComponentDefinition(componentKindName(kind));
  if (definition === undefined) {
    throw new UsageError(
      unknownKindDescription(
        'component',
        kind,
        componentCatalog().map((known) => shortKindName(known.qualifiedName)),
      ),
    );
  }
  return definition;
}

interface ExportOptions {
  all: boolean;
  compact: boolean;
  format?: 'yaml' | 'json';
  out?: string;
  force: boolean;
}

/** `loom workflow export` and `loom workflow new`: workflow files in either form. */
export function addWorkflowFileCommands(workflow: Command): void {
  workflow
    .command('export')
    .description(
      'write a stored workflow as a file: the full .workflow.json form, or with --compact the compact form; with --all every workflow and schedule into a folder, $$ references and no secret value',
    )
    .argument('<name|dir>', 'stored name <workflow_name>_<uuid>, or the workflow name when only one has it; with --all the folder to write')
    .option('--all', 'every stored workflow into the folder <dir>: <name>.workflow.yaml (or .json) and <name>.scheduler.json each', false)
    .option('--compact', 'the compact form (YAML; JSON with --format json or an --out file ending in .json)', false)
    .addOption(new Option('--format <format>', 'with --compact: yaml or json').choices(['yaml', 'json']))
    .option('--out <file>', 'write the file here instead of to standard output')
    .option('--force', 'with --out: replace an existing file', false)
    .action((name: string, options: ExportOptions, command: Command) => {
      if (options.all) {
        if (options.out !== undefined) throw new UsageError('--all writes a folder: give it as the argument, not --out');
        return exportAll(command, name, options);
      }
      return withClient(command, WorkflowStoreClient, async (client) => {
        const { workflow: stored } = await call(client, 'getWorkflow', { name });
        if (stored === undefined) return;
        const configuration = workflowFromProto(stored);
        const format = options.format ?? (options.out?.toLowerCase().endsWith('.json') === true ? 'json' : 'yaml');
        const text = options.compact ? serializeCompactWorkflow(configuration, format) : serializeWorkflowJson(configuration);
        if (options.out === undefined) cliIo().stdout.write(text);
        else writeNew(options.out, text, options.force);
      });
    });

  workflow
    .command('new')
    .description('write a compact workflow file with the given components linked in order, every option at its default with a comment')
    .argument('<file>', 'the file to write, e.g. etl.workflow.yaml')
    .requiredOption('--component <kind>', 'a component kind, short (source.Inlet) or qualified (repeatable, in link order)', collect, [])
    .option('--name <name>', 'the workflow name (default: the file name without .workflow.yaml)')
    .option(
      '--schema <path-or-url>',
      "the compact JSON Schema the editor comment names (e.g. a checkout's libs/domain/schema/compact-workflow.schema.json)",
      COMPACT_SCHEMA_URL,
    )
    .option('--force', 'replace an existing file', false)
    .action((file: string, options: { component: string[]; name?: string; schema: string; force: boolean }) => {
      if (options.component.length === 0) throw new UsageError('give at least one --component KIND (loom component list shows them)');
      for (const kind of options.component) definitionOf(kind);
      const text = scaffoldCompactWorkflow({ name: options.name ?? nameFromFile(file), kinds: options.component, schema: options.schema });
      writeNew(file, text, options.force);
    });
}

/** `loom component show KIND`: a kind's options from the catalog and a ready snippet. */
export function addComponentShowCommand(component: Command): void {
  component
    .command('show')
    .description("a component kind's options (type, default, allowed values, what each does) and a compact workflow using it")
    .argument('<kind>', 'the kind, short (sink.Logger) or qualified (loom.components.sink.Logger)')
    .action((kind: string, _options: object, command: Command) => {
      const definition = definitionOf(kind);
      const { output } = command.optsWithGlobals<GlobalOptions>();
      if (output === 'json') {
        printTable('json', [], definition);
        return;
      }
      const resource = definition.resource === null ? '' : `; resource ${definition.resource}`;
      const experimental = definition.experimental === true ? '; experimental (available with loom.experimental.enabled)' : '';
      cliIo().stdout.write(
        `${shortKindName(definition.qualifiedName)} (${definition.qualifiedName}): ${definition.name}, ${definition.type}; ` +
          `${definition.inputType} → ${definition.outputType}${resource}${experimental}\n\n`,
      );
      printTable(
        'text',
        definition.options.map((option) => ({
          option: option.name,
          type: option.type,
          default: JSON.stringify(option.defaultValue),
          required: option.required ? 'yes' : 'no',
          allowed: optionConstraint(definition.qualifiedName, option.name)?.allowedValues?.join('|') ?? '-',
          description: option.label,
        })),
      );
      // a push refuses a component no source reaches: a kind that takes messages gets an inlet in front of it
      const kinds = definition.type === 'SOURCE' ? [definition.qualifiedName] : [COMPONENT_KINDS.INLET, definition.qualifiedName];
      const snippet = scaffoldCompactWorkflow({ name: `${definition.name} example`, kinds });
      const components = kinds.map((qualifiedName) => `--component ${shortKindName(qualifiedName)}`).join(' ');
      cliIo().stdout.write(`\n# a compact workflow with it (loom workflow new FILE ${components}):\n${snippet}`);
    });
}
