import { readFileSync } from 'node:fs';
import { CircuitState, SkillGatewayClient } from '@loom/contracts';
import { type Skill, SKILL_CAPABILITIES, type SkillCapabilityName, ValidationError } from '@loom/domain';
import { workflowFromProto, workflowToProto } from '@loom/domain/proto';
import { call } from '@loom/service-kit/client';
import { type Command, Option } from 'commander';
import { type GlobalOptions } from '../global-options.js';
import { printTable } from '../output.js';
import { withClient } from '../service-client.js';
import { cliIo, setExitCode, inputPath } from '../cli-io.js';

function withGateway<T>(command: Command, use: (client: SkillGatewayClient, globals: GlobalOptions) => Promise<T>): Promise<T> {
  return withClient(command, SkillGatewayClient, use);
}

interface RegisterOptions {
  capability?: string;
  name?: string;
  url?: string;
  pipeline?: string;
  version?: string;
  parameters?: string;
  replace?: boolean;
}

/** A capability as typed (`entity-extraction`, `ENTITY_EXTRACTION`, `keyword_extraction`). */
function capabilityOf(text: string, field: string): SkillCapabilityName {
  const name = text.trim().toUpperCase().replaceAll('-', '_');
  if (!(SKILL_CAPABILITIES as readonly string[]).includes(name))
    throw ValidationError.of(field, `must be one of ${SKILL_CAPABILITIES.join(', ')}`, 'INVALID_VALUE');
  return name as SkillCapabilityName;
}

function readJson(file: string, what: string): unknown {
  let text: string;
  try {
    text = readFileSync(inputPath(file), 'utf8');
  } catch (error) {
    throw ValidationError.of(what, `cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`, 'UNREADABLE');
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw ValidationError.of(what, `${file} is not JSON`, 'INVALID_VALUE');
  }
}

function stringField(object: Record<string, unknown>, key: string, required: boolean): string | undefined {
  const value = object[key];
  if (value === undefined || value === null) {
    if (required) throw ValidationError.of(key, 'is required', 'MISSING_FIELD');
    return undefined;
  }
  if (typeof value !== 'string') throw ValidationError.of(key, 'must be a string', 'WRONG_TYPE');
  return value;
}

/** The skill to register: from a JSON file with the registration fields, or from the options (which override the file). */
export function skillFromInput(file: string | undefined, options: RegisterOptions): Skill {
  const fromFile = file === undefined ? {} : readJson(file, 'file');
  if (typeof fromFile !== 'object' || fromFile === null || Array.isArray(fromFile))
    throw ValidationError.of('file', 'must hold a JSON object: {capability, name, url, pipeline?, version?, parameters?}', 'INVALID_VALUE');
  const given: Record<string, unknown> = { ...fromFile };
  for (const key of ['capability', 'name', 'url', 'pipeline', 'version'] as const) if (options[key] !== undefined) given[key] = options[key];
  if (options.parameters !== undefined) {
    try {
      given.parameters = JSON.parse(options.parameters) as unknown;
    } catch {
      throw ValidationError.of('parameters', 'must be a JSON object', 'INVALID_VALUE');
    }
  }
  const skill: Skill = {
    name: stringField(given, 'name', true) ?? '',
    url: stringField(given, 'url', true) ?? '',
    capability: capabilityOf(stringField(given, 'capability', true) ?? '', 'capability'),
  };
  const pipeline = stringField(given, 'pipeline', false);
  const version = stringField(given, 'version', false);
  if (pipeline !== undefined) skill.pipeline = pipeline;
  if (version !== undefined) skill.version = version;
  if (given.parameters !== undefined && given.parameters !== null) {
    if (typeof given.parameters !== 'object' || Array.isArray(given.parameters))
      throw ValidationError.of('parameters', 'must be a JSON object', 'INVALID_VALUE');
    skill.parameters = given.parameters as Record<string, unknown>;
  }
  return skill;
}

function oneSkill(skill: Skill): ReturnType<typeof workflowToProto>['skills'][number] {
  return workflowToProto({ name: 'skill', autoStart: false, components: [], links: [], resources: [], skills: [skill], workflowResources: [] })
    .skills[0] as ReturnType<typeof workflowToProto>['skills'][number];
}

function skillJson(message: ReturnType<typeof oneSkill>): Skill {
  return workflowFromProto({ name: 'skill', autoStart: false, components: [], links: [], resources: [], skills: [message], workflowResources: [] })
    .skills[0] as Skill;
}

const circuitName = (state: CircuitState): string => CircuitState[state]?.replace('CIRCUIT_STATE_', '') ?? String(state);

/** `loom skill register|list|delete|check|pipeline create`. */
export function addSkillCommands(program: Command): Command {
  const skill = program.command('skill').description('skills: external NLP microservices registered with the skill gateway');

  skill
    .command('register')
    .description('register a skill from a JSON file ({capability, name, url, pipeline, version, parameters}) or from options')
    .argument('[file]', 'JSON file with the registration fields')
    .addOption(new Option('--capability <capability>', 'entity-extraction, keyword-extraction, web-data-extraction or pdf-parsing'))
    .option('--name <name>', 'the skill name')
    .option('--url <url>', 'URL with its endpoint: /annotate or /v2/annotate, /extractKeywords, ...')
    .option('--pipeline <pipeline>', "entity extraction: the NLP pipeline ('default' selects the default one)")
    .option('--version <version>', "entity extraction: blank for /annotate, 'v2' for /v2/annotate")
    .option('--parameters <json>', 'keyword extraction: extra parameters as a JSON object')
    .option('--replace', 'replace a registration of the same name')
    .action((file: string | undefined, options: RegisterOptions, command: Command) =>
      withGateway(command, async (client, globals) => {
        const given = skillFromInput(file, options);
        const { skill: registered } = await call(client, 'registerSkill', { skill: oneSkill(given), replace: options.replace === true });
        const shown = registered === undefined ? given : skillJson(registered);
        if (globals.output === 'json') printTable('json', [], shown);
        else cliIo().stdout.write(`registered ${shown.capability ?? ''} skill '${shown.name}' at ${shown.url}\n`);
      }),
    );

  skill
    .command('list')
    .description('every registered skill')
    .action((_options: object, command: Command) =>
      withGateway(command, async (client, globals) => {
        const { skills, registrations } = await call(client, 'listSkills', {});
        const entries = skills.map(skillJson);
        if (globals.output === 'json') {
          printTable(
            'json',
            [],
            entries.map((entry, i) => ({ ...entry, createdAt: registrations[i]?.createdAt ?? null, updatedAt: registrations[i]?.updatedAt ?? null })),
          );
          return;
        }
        if (entries.length === 0) cliIo().stdout.write('no skills registered\n');
        printTable(
          'text',
          entries.map((entry) => ({
            name: entry.name,
            capability: entry.capability ?? '-',
            url: entry.url,
            pipeline: entry.pipeline ?? '-',
            version: entry.version ?? '-',
            parameters: entry.parameters === undefined ? '-' : JSON.stringify(entry.parameters),
          })),
        );
      }),
    );

  skill
    .command('delete')
    .description('delete a registration (workflows naming the skill fail at their next start)')
    .argument('<name>', 'the skill name')
    .action((name: string, _options: object, command: Command) =>
      withGateway(command, async (client) => {
        await call(client, 'deleteSkill', { name });
        cliIo().stdout.write(`deleted skill '${name}'\n`);
      }),
    );

  skill
    .command('check')
    .description('probe a skill (GET <base url>/health): reachability, latency, circuit state; exit 1 when it does not answer')
    .argument('<name>', 'the skill name')
    .action((name: string, _options: object, command: Command) =>
      withGateway(command, async (client, globals) => {
        const checked = await call(client, 'checkSkill', { name });
        const row = {
          skill: name,
          reachable: checked.reachable,
          latencyMs: checked.latencyMs,
          http: checked.httpStatus,
          circuit: circuitName(checked.circuitState),
          inFlight: `${checked.inFlight}/${checked.maxConcurrency}`,
          detail: checked.detail,
        };
        printTable(globals.output, [row], { ...checked, circuitState: circuitName(checked.circuitState) });
        if (!checked.reachable) setExitCode(1);
      }),
    );

  skill
    .command('pipeline')
    .description('NLP pipelines of entity extraction skills')
    .command('create')
    .description(
      'create a pipeline on an entity extraction skill (POST /pipeline/new) from a JSON file {name, language, textProcessor, annotators, nerRegexFiles}',
    )
    .argument('<skill>', 'the entity extraction skill')
    .requiredOption('--file <file>', 'JSON file with the pipeline')
    .action((skillName: string, options: { file: string }, command: Command) =>
      withGateway(command, async (client) => {
        const given = readJson(options.file, '--file');
        if (typeof given !== 'object' || given === null || Array.isArray(given)) throw ValidationError.of('--file', 'must hold a JSON object', 'INVALID_VALUE');
        const fields = given as Record<string, unknown>;
        const strings = (key: string): string[] => {
          const value = fields[key] ?? [];
          if (!Array.isArray(value) || !value.every((item) => typeof item === 'string'))
            throw ValidationError.of(key, 'must be an array of strings', 'WRONG_TYPE');
          return value;
        };
        const pipeline = {
          name: stringField(fields, 'name', true) ?? '',
          language: stringField(fields, 'language', false) ?? 'en',
          textProcessor: stringField(fields, 'textProcessor', false) ?? '',
          annotators: strings('annotators'),
          nerRegexFiles: strings('nerRegexFiles'),
        };
        const { response } = await call(client, 'createPipeline', { skillName, pipeline });
        cliIo().stdout.write(`${JSON.stringify(response ?? {}, null, 2)}\n`);
      }),
    );

  return skill;
}
