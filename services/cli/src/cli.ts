import { readFileSync } from 'node:fs';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { cliIo, type CliIo, processIo, setExitCode, withCliIo } from './cli-io.js';
import { type GlobalOptions } from './global-options.js';
import { type OutputFormat } from './output.js';
import { UsageError } from './usage-error.js';

const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

/** Exit code of a usage or configuration error (EXIT_USAGE of the service kit, kept here so `--version` loads nothing). */
const EXIT_USAGE = 2;

/**
 * The top-level commands, grouped by the file that defines them. A command's code (the gRPC
 * contracts, the services, the graph drivers…) loads only when a command of its group runs, so
 * `loom --version` and `loom health` start quickly; `loom --help` and an unknown command load all.
 */
export const commandGroups: readonly { readonly names: readonly string[]; readonly register: (program: Command) => void | Promise<void> }[] = [
  { names: ['serve'], register: async (program) => (await import('./commands/serve.js')).addServeCommand(program) },
  { names: ['health'], register: addHealthCommand },
  { names: ['variable', 'secrets'], register: async (program) => (await import('./commands/secrets.js')).addSecretsCommands(program) },
  {
    names: ['workflow', 'schedule', 'component', 'message'],
    register: async (program) => {
      const [{ addWorkflowCommands }, { addExecutorCommands }, { addScheduleCommands }, { addWorkflowFileCommands, addComponentShowCommand }] =
        await Promise.all([
          import('./commands/workflows.js'),
          import('./commands/executor.js'),
          import('./commands/schedules.js'),
          import('./commands/workflow-files.js'),
        ]);
      const { workflow, schedule } = addWorkflowCommands(program);
      const { component } = addExecutorCommands(program, workflow);
      addScheduleCommands(schedule);
      addWorkflowFileCommands(workflow);
      addComponentShowCommand(component);
    },
  },
  { names: ['audit'], register: async (program) => (await import('./commands/audit.js')).addAuditCommands(program) },
  { names: ['failures'], register: async (program) => (await import('./commands/failures.js')).addFailuresCommands(program) },
  { names: ['graph'], register: async (program) => (await import('./commands/graph.js')).addGraphCommands(program) },
  { names: ['login', 'logout'], register: async (program) => (await import('./commands/login.js')).addLoginCommands(program) },
  { names: ['skills'], register: async (program) => (await import('./commands/skills.js')).addSkillsCommands(program) },
  {
    names: ['skill'],
    register: async (program) => {
      (await import('./commands/skill.js')).addSkillCommands(program);
    },
  },
];

/** Global options that take a value, so the word after them is not a command. */
const VALUE_OPTIONS = new Set(['--address', '--output', '--token']);

/** The command word of a command line: its first argument that is neither an option nor an option's value. */
function commandWord(argv: readonly string[]): string | undefined {
  for (let index = 0; index < argv.length; index += 1) {
    const arg = argv[index] as string;
    if (arg === '--') return argv[index + 1];
    if (VALUE_OPTIONS.has(arg)) index += 1;
    else if (!arg.startsWith('-')) return arg;
  }
  return undefined;
}

/** The groups a command line needs: its command's group, none for a bare --version, else all (help, typos). */
export function groupsFor(argv: readonly string[]): typeof commandGroups {
  const word = commandWord(argv);
  const group = word === undefined ? undefined : commandGroups.find((candidate) => candidate.names.includes(word));
  if (group !== undefined) return [group];
  if (word === undefined && argv.some((arg) => arg === '-V' || arg === '--version')) return [];
  return commandGroups;
}

function parseOutput(value: string): OutputFormat {
  if (value !== 'json' && value !== 'text') throw new InvalidArgumentError("expected 'text' or 'json'.");
  return value;
}

/**
 * Builds the `loom` command line with the commands `argv` needs (every command when argv is not given).
 * `--version` is loom's own only before any command: commander reads a program's options anywhere on the
 * line, so a global `--version` would swallow a command's own (`loom skill register … --version v2`).
 */
export async function buildProgram(argv?: readonly string[]): Promise<Command> {
  const program = new Command('loom').description('loom: workflow processing for knowledge-graph pipelines');
  const word = argv === undefined ? undefined : commandWord(argv);
  // `loom help` lists it too
  const io = cliIo();
  // before any command is added: commands copy these settings from their parent when they are made
  program.configureOutput({ writeOut: (text) => io.stdout.write(text), writeErr: (text) => io.stderr.write(text) }).exitOverride();
  if (word === undefined || word === 'help') program.version(version, '-V, --version', 'print the version');
  // the environment's value as the default rather than commander's .env(), which reads process.env and not the run's
  const { LOOM_ADDRESS: address, LOOM_TOKEN: token } = io.env;
  program
    .addOption(new Option('--address <host:port>', 'address of a running loom (env: LOOM_ADDRESS)').default(address ?? 'localhost:8100'))
    .addOption(new Option('--output <format>', 'output format: text or json').default('text').argParser(parseOutput))
    .addOption(new Option('--token <token>', 'bearer token presented to loom (env: LOOM_TOKEN)').default(token))
    .showSuggestionAfterError();
  for (const group of argv === undefined ? commandGroups : groupsFor(argv)) await group.register(program);
  return program;
}

function addHealthCommand(program: Command): void {
  program
    .command('health')
    .description('check the health of every service of a running loom (see --address)')
    .action(async (_options: object, command: Command) => {
      const globals = command.optsWithGlobals<GlobalOptions>();
      const { healthCommand } = await import('./commands/health.js');
      setExitCode(await healthCommand(globals));
    });
}

/**
 * Runs the command line with `io` (the process's own by default) and returns its exit code; errors are printed as one
 * line. Nothing here ends the process: runs may share one (tests), each with its own IO.
 */
export async function run(argv: readonly string[], io: CliIo = processIo()): Promise<number> {
  const { result: failed, exitCode } = await withCliIo(io, async () => {
    try {
      const program = await buildProgram(argv);
      await program.parseAsync([...argv], { from: 'user' });
      return undefined;
    } catch (error) {
      return reportError(error);
    }
  });
  return failed ?? exitCode;
}

/** Prints a command's failure as one line and gives its exit code; the error classes load only now. */
async function reportError(error: unknown): Promise<number> {
  const { stderr } = cliIo();
  if (error instanceof CommanderError) {
    // Commander has printed its one-line message (or the help/version text) already.
    return error.exitCode === 0 ? 0 : EXIT_USAGE;
  }
  if (error instanceof UsageError) {
    stderr.write(`loom: ${error.message}\n`);
    return EXIT_USAGE;
  }
  const [{ describeStartupError, isServiceError, fieldViolationsOf }, { LoomError, ValidationError }, { ConfigError }] = await Promise.all([
    import('@loom/service-kit/errors'),
    import('@loom/domain'),
    import('@loom/config'),
  ]);
  if (isServiceError(error)) {
    const fields = fieldViolationsOf(error).map((violation) => `${violation.field}: ${violation.description}`);
    const { status } = await import('@grpc/grpc-js');
    stderr.write(`loom: ${status[error.code]}: ${fields.length > 0 ? fields.join('; ') : error.details}\n`);
    return 1;
  }
  if (error instanceof ValidationError) {
    // a file the command read itself, rejected before anything was sent
    stderr.write(`loom: INVALID_ARGUMENT: ${error.violations.map((v) => (v.field === '' ? v.description : `${v.field}: ${v.description}`)).join('; ')}\n`);
    return 1;
  }
  if (error instanceof LoomError) {
    // work the command did itself (a graph query) and that failed: the error names what and why
    stderr.write(`loom: ${error.message}\n`);
    return 1;
  }
  stderr.write(`loom: ${describeStartupError(error)}\n`);
  return error instanceof ConfigError ? EXIT_USAGE : 1;
}
