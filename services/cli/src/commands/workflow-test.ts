import { writeFileSync } from 'node:fs';
import { type Command } from 'commander';
import { cliIo, inputPath, setExitCode } from '../cli-io.js';
import { type GlobalOptions } from '../global-options.js';
import { printTable } from '../output.js';
import { UsageError } from '../usage-error.js';

interface WorkflowTestOptions {
  readonly junit?: string;
  readonly list?: boolean;
  readonly config?: string;
  readonly set: string[];
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/**
 * `loom workflow test FILE|DIR...`: runs `*.test.yaml` files through the dry run in this process (no server, no skill
 * called, nothing written outside the process), prints each test's outcome, writes a JUnit report with `--junit`, and
 * exits 1 when a test failed or could not run. A bad test file runs nothing: every violation is listed with its line.
 */
export function addWorkflowTestCommand(workflow: Command): void {
  workflow
    .command('test')
    .description(
      'run workflow tests (*.test.yaml: input messages, the messages expected at components, mocked skill answers) through the dry run in this process: no server, no side effects; exit 1 when a test fails',
    )
    .argument('<paths...>', '*.test.yaml files, or directories searched for them (their whole tree)')
    .option('--junit <file>', 'also write the results there as JUnit XML, for CI systems')
    .option('--list', 'read and check every file against its workflow, list the tests, run none')
    .option('--config <file>', 'configuration file the components are built with (script limits, Python settings)')
    .option('--set <key=value>', 'override a configuration key (repeatable)', collect, [])
    .action(async (paths: string[], options: WorkflowTestOptions, command: Command) => {
      const globals = command.optsWithGlobals<GlobalOptions>();
      const [{ readSuites, runSuites, testFilesOf }, { junitReport }, { componentFactories, dryRun, GraphStores }, { loadConfig }, { createLogger }] =
        await Promise.all([
          import('../workflow-tests/workflow-tests.js'),
          import('../workflow-tests/junit.js'),
          import('@loom/executor'),
          import('@loom/config'),
          import('@loom/telemetry'),
        ]);
      // every file is read and checked against its workflow before any test runs
      const suites = readSuites([...new Set(paths.flatMap((path) => testFilesOf(path)))]);
      const io = cliIo();
      if (options.list === true) {
        const rows = suites.flatMap((suite) => suite.tests.map((test) => ({ file: suite.file, workflow: suite.workflowFile, test: test.name })));
        printTable(globals.output, rows);
        return;
      }
      const config = loadConfig({ env: io.env, overrides: options.set, ...(options.config === undefined ? {} : { configFile: inputPath(options.config) }) });
      // the components' own logs (a logger sink's messages) are not the report: only errors reach standard error
      const logger = createLogger({ level: 'error', base: { command: 'loom workflow test' }, destination: { write: (line: string) => io.stderr.write(line) } });
      const graphStores = new GraphStores(config, logger);
      const factories = componentFactories(config, { graphStores });
      const text = globals.output !== 'json';
      let results;
      try {
        results = await runSuites(
          suites,
          (workflow, messages, scope) => dryRun(workflow, messages, scope, factories, logger),
          (result) => {
            if (!text) return;
            const mark = result.outcome === 'passed' ? 'PASS' : result.outcome === 'failed' ? 'FAIL' : 'ERROR';
            io.stdout.write(`${mark}  ${result.file} › ${result.name} (${Math.round(result.ms)} ms)\n`);
            for (const failure of result.failures) io.stdout.write(`      ${failure}\n`);
          },
        );
      } finally {
        await graphStores.close();
      }
      if (options.junit !== undefined) {
        try {
          writeFileSync(inputPath(options.junit), junitReport(results));
        } catch (error) {
          throw new UsageError(`--junit: cannot write ${options.junit}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
        }
      }
      const count = (outcome: string): number => results.filter((result) => result.outcome === outcome).length;
      const summary = { tests: results.length, passed: count('passed'), failed: count('failed'), errors: count('error'), files: suites.length };
      if (text)
        io.stdout.write(
          `${summary.passed} passed, ${summary.failed} failed, ${summary.errors} could not run (${summary.tests} tests in ${summary.files} files)\n`,
        );
      else io.stdout.write(`${JSON.stringify({ ...summary, results }, null, 2)}\n`);
      if (summary.passed !== summary.tests) setExitCode(1);
    });
}
