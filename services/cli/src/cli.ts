import { readFileSync } from 'node:fs';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { describeStartupError, EXIT_USAGE, fieldViolationsOf, isServiceError, serveProcess } from '@loom/service-kit';
import { status, type ServiceError } from '@grpc/grpc-js';
import { ConfigError, loadConfig } from '@loom/config';
import { LoomError, ValidationError } from '@loom/domain';
import { healthCommand } from './commands/health.js';
import { addAuditCommands } from './commands/audit.js';
import { addExecutorCommands } from './commands/executor.js';
import { addGraphCommands } from './commands/graph.js';
import { addLoginCommands } from './commands/login.js';
import { addScheduleCommands } from './commands/schedules.js';
import { addSecretsCommands } from './commands/secrets.js';
import { addSkillCommands } from './commands/skill.js';
import { addSkillsCommands, besideLoomSettings, parsePorts, selectSkills, serveSkillModules } from './commands/skills.js';
import { type SkillModule } from '@loom/skill-service-kit';
import { addWorkflowCommands } from './commands/workflows.js';
import { type GlobalOptions } from './global-options.js';
import { selectModules, UsageError } from './modules.js';
import { type OutputFormat } from './output.js';

const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };


function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

function parseOutput(value: string): OutputFormat {
  if (value !== 'json' && value !== 'text') throw new InvalidArgumentError("expected 'text' or 'json'.");
  return value;
}

/** Builds the `loom` command line; `run` parses it and returns the exit code. */
export function buildProgram(): Command {
  const program = new Command('loom')
    .description('loom: workflow processing for knowledge-graph pipelines')
    .version(version, '-V, --version', 'print the version')
    .addOption(new Option('--address <host:port>', 'address of a running loom').default('localhost:8100').env('LOOM_ADDRESS'))
    .addOption(new Option('--output <format>', 'output format: text or json').default('text').argParser(parseOutput))
    .addOption(new Option('--token <token>', 'bearer token presented to loom').env('LOOM_TOKEN'))
    .showSuggestionAfterError()
    .exitOverride();

  program
    .command('serve')
    .description('run loom services in this process (all six by default)')
    .option('--services <list>', 'comma-separated services to run: config-store,scheduler,executor,secrets,skill-gateway,audit')
    .option('--config <file>', 'configuration file (.yaml, .yml or .properties)')
    .option('--set <key=value>', 'override a configuration key (repeatable)', collect, [])
    .option('--with-skills [list]', "also run loom's skill services in this process (all, or a comma-separated list), on their published ports")
    .option('--skill-port <skill=port>', 'with --with-skills: port of one skill (repeatable; 0 picks a free one)', collect, [])
    .action(async (options: { services?: string; config?: string; set: string[]; withSkills?: string | true; skillPort: string[] }) => {
      const source = { ...(options.config === undefined ? {} : { configFile: options.config }), overrides: options.set };
      const modules = selectModules(options.services);
      if (options.withSkills === undefined) return serveProcess(modules, source);
      // everything that can be refused is checked before anything starts
      const skills = selectSkills(options.withSkills === true ? undefined : options.withSkills);
      const ports = parsePorts(options.skillPort);
      const settings = besideLoomSettings(loadConfig({ ...source, env: process.env }).data.skillsDirectory);
      const portOf = (module: SkillModule): number => ports.get(module.name) ?? module.hostPort;
      await Promise.all([serveProcess(modules, source), serveSkillModules(skills, { settings, startTelemetry: false, portOf })]);
    });

  program
    .command('health')
    .description('check the health of every service of a running loom (see --address)')
    .action(async (_options: object, command: Command) => {
      const globals = command.optsWithGlobals<GlobalOptions>();
      process.exitCode = await healthCommand(globals);
    });

  addSecretsCommands(program);
  const { workflow, schedule } = addWorkflowCommands(program);
  addExecutorCommands(program, workflow);
  addScheduleCommands(schedule);
  addAuditCommands(program);
  addGraphCommands(program);
  addLoginCommands(program);
  addSkillsCommands(program);
  addSkillCommands(program);

  return program;
}

/** Runs the command line and returns the process exit code; errors are printed as one line. */
export async function run(argv: readonly string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Commander has printed its one-line message (or the help/version text) already.
      return error.exitCode === 0 ? 0 : EXIT_USAGE;
    }
    if (isServiceError(error)) {
      process.stderr.write(`loom: ${describeRpcError(error)}\n`);
      return 1;
    }
    if (error instanceof ValidationError) {
      // a file the command read itself, rejected before anything was sent
      process.stderr.write(`loom: INVALID_ARGUMENT: ${error.violations.map((v) => (v.field === '' ? v.description : `${v.field}: ${v.description}`)).join('; ')}\n`);
      return 1;
    }
    if (error instanceof UsageError) {
      process.stderr.write(`loom: ${error.message}\n`);
      return EXIT_USAGE;
    }
    if (error instanceof LoomError) {
      // work the command did itself (a graph query) and that failed: the error names what and why
      process.stderr.write(`loom: ${error.message}\n`);
      return 1;
    }
    process.stderr.write(`loom: ${describeStartupError(error)}\n`);
    return error instanceof ConfigError ? EXIT_USAGE : 1;
  }
}

/** One line for a failed RPC: its status name, message and the fields it names. */
function describeRpcError(error: ServiceError): string {
  const fields = fieldViolationsOf(error).map((violation) => `${violation.field}: ${violation.description}`);
  const detail = fields.length > 0 ? fields.join('; ') : error.details;
  return `${status[error.code]}: ${detail}`;
}
