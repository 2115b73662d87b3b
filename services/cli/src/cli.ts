import { readFileSync } from 'node:fs';
import { type ServiceError } from '@grpc/grpc-js';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { type GlobalOptions } from './global-options.js';
import { type OutputFormat } from './output.js';
import { UsageError } from './usage-error.js';

// Only commander is loaded up front: each command's code (gRPC clients, the domain, the six
// services for `serve`) is imported when that command runs, so `loom --version` and `loom health`
// start in a fraction of the time that loading everything takes.

const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

/** Global options that take a value: what follows them is not a command name. */
const GLOBAL_OPTIONS_WITH_VALUES = new Set(['--address', '--output', '--token']);

/** The top-level command of an argument list (`workflow` in `--address x workflow push f`), if any. */
export function commandOf(argv: readonly string[]): string | undefined {
  for (let index = 0; index < argv.length; index++) {
    const arg = argv[index] as string;
    if (GLOBAL_OPTIONS_WITH_VALUES.has(arg)) index++;
    else if (!arg.startsWith('-')) return arg;
  }
  return undefined;
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

function parseOutput(value: string): OutputFormat {
  if (value !== 'json' && value !== 'text') throw new InvalidArgumentError("expected 'text' or 'json'.");
  return value;
}

/** Command groups defined by the command files, by the top-level names they add. */
const GROUPS: readonly { readonly names: readonly string[]; add(program: Command): Promise<void> }[] = [
  { names: ['variable', 'secrets'], add: async (program) => (await import('./commands/secrets.js')).addSecretsCommands(program) },
  {
    names: ['workflow', 'schedule', 'component', 'message'],
    add: async (program) => {
      const [{ addWorkflowCommands }, { addExecutorCommands }, { addScheduleCommands }] = await Promise.all([
        import('./commands/workflows.js'),
        import('./commands/executor.js'),
        import('./commands/schedules.js'),
      ]);
      const { workflow, schedule } = addWorkflowCommands(program);
      addExecutorCommands(program, workflow);
      addScheduleCommands(schedule);
    },
  },
  { names: ['audit'], add: async (program) => (await import('./commands/audit.js')).addAuditCommands(program) },
  { names: ['graph'], add: async (program) => (await import('./commands/graph.js')).addGraphCommands(program) },
];

/**
 * Builds the `loom` command line. Given the arguments, it loads only the command files the
 * command needs (all of them for help, or for an unknown command so that suggestions work).
 */
export async function buildProgram(argv?: readonly string[]): Promise<Command> {
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
    .action(async (options: { services?: string; config?: string; set: string[] }) => {
      const [{ serveProcess }, { selectModules }] = await Promise.all([import('@loom/service-kit'), import('./modules.js')]);
      await serveProcess(selectModules(options.services), {
        ...(options.config === undefined ? {} : { configFile: options.config }),
        overrides: options.set,
      });
    });

  program
    .command('health')
    .description('check the health of every service of a running loom (see --address)')
    .action(async (_options: object, command: Command) => {
      const globals = command.optsWithGlobals<GlobalOptions>();
      process.exitCode = await (await import('./commands/health.js')).healthCommand(globals);
    });

  const command = argv === undefined ? undefined : commandOf(argv);
  const versionOnly = argv !== undefined && command === undefined && argv.some((arg) => arg === '-V' || arg === '--version');
  const known = command === 'serve' || command === 'health' || GROUPS.some((group) => group.names.includes(command ?? ''));
  for (const group of GROUPS) {
    if (versionOnly || (known && !group.names.includes(command ?? ''))) continue;
    await group.add(program);
  }
  return program;
}

/** Runs the command line and returns the process exit code; errors are printed as one line. */
export async function run(argv: readonly string[]): Promise<number> {
  const program = await buildProgram(argv);
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (error) {
    // Commander has printed the help or version text already (its way of ending is an error)
    if (error instanceof CommanderError && error.exitCode === 0) return 0;
    // loaded only when there is an error to report: nothing of gRPC is needed for `--version`
    const { EXIT_USAGE } = await import('@loom/service-kit/client');
    // Commander has printed its one-line message already
    if (error instanceof CommanderError) return EXIT_USAGE;
    if (error instanceof UsageError) {
      process.stderr.write(`loom: ${error.message}\n`);
      return EXIT_USAGE;
    }
    // the error's classes are loaded only now that there is an error to describe
    const [{ status }, { describeStartupError, fieldViolationsOf, isServiceError }, { ConfigError }, { LoomError, ValidationError }] = await Promise.all([
      import('@grpc/grpc-js'),
      import('@loom/service-kit'),
      import('@loom/config'),
      import('@loom/domain'),
    ]);
    if (isServiceError(error)) {
      process.stderr.write(`loom: ${describeRpcError(error, fieldViolationsOf, status)}\n`);
      return 1;
    }
    if (error instanceof ValidationError) {
      // a file the command read itself, rejected before anything was sent
      process.stderr.write(`loom: INVALID_ARGUMENT: ${error.violations.map((v) => (v.field === '' ? v.description : `${v.field}: ${v.description}`)).join('; ')}\n`);
      return 1;
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
function describeRpcError(
  error: ServiceError,
  fieldViolationsOf: (error: ServiceError) => readonly { field: string; description: string }[],
  status: Record<number, string>,
): string {
  const fields = fieldViolationsOf(error).map((violation) => `${violation.field}: ${violation.description}`);
  const detail = fields.length > 0 ? fields.join('; ') : error.details;
  return `${status[error.code]}: ${detail}`;
}
