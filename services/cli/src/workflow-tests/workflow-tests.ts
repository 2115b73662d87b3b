import { existsSync, readdirSync, statSync } from 'node:fs';
import { basename, dirname, isAbsolute, join } from 'node:path';
import { type DryRunComponentOutput } from '@loom/contracts';
import {
  appendJsonPath,
  findComponentDefinition,
  instanceNamed,
  parseStoredName,
  readWorkflowTestText,
  SKILL_CAPABILITY_QUALIFIED_NAMES,
  type FieldViolation,
  type SkillCapabilityName,
  ValidationError,
  type WorkflowConfiguration,
  type WorkflowTestCase,
  type WorkflowTestSkillAnswers,
} from '@loom/domain';
import { type ComponentFactory, type DryRunScope, standInSkillFactory, type StandInSkillAnswer } from '@loom/executor';
import { inputPath } from '../cli-io.js';
import { readWorkflowFile, readWorkflowFileText } from '../workflow-file.js';
import { mismatches, shown } from './matchers.js';

/** The names a test file may have. */
const TEST_FILE = /\.test\.ya?ml$/i;
/** The workflow files a test file is paired with when it names none, in the order they are looked for. */
const WORKFLOW_EXTENSIONS = ['.workflow.yaml', '.workflow.yml', '.workflow.json'];

/** A test file read and checked against its workflow, ready to run. */
export interface WorkflowTestSuite {
  /** The test file, as the command line reached it. */
  readonly file: string;
  readonly workflowFile: string;
  readonly workflow: WorkflowConfiguration;
  readonly tests: readonly WorkflowTestCase[];
}

/** What one test came to: passed, failed (what differed) or error (it could not run: why). */
export interface WorkflowTestResult {
  readonly file: string;
  readonly workflow: string;
  readonly name: string;
  readonly outcome: 'passed' | 'failed' | 'error';
  readonly failures: readonly string[];
  readonly ms: number;
}

/** Runs a workflow's dry run in this process (the executor's dryRun with this process's component kinds). */
export type DryRunner = (
  workflow: WorkflowConfiguration,
  messages: { id: string; body: Record<string, unknown>; headers: Record<string, string> }[],
  scope: DryRunScope,
) => Promise<DryRunComponentOutput[]>;

/** The `*.test.yaml` files of a file or directory (its tree, sorted; dot directories and node_modules left out). */
export function testFilesOf(target: string): string[] {
  const absolute = inputPath(target);
  if (!existsSync(absolute)) throw ValidationError.of('', `${target}: no such file or directory`, 'NOT_FOUND');
  if (!statSync(absolute).isDirectory()) return [target];
  const found: string[] = [];
  const visit = (shownDir: string, dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      if (entry.isDirectory() && !entry.name.startsWith('.') && entry.name !== 'node_modules') visit(join(shownDir, entry.name), join(dir, entry.name));
      else if (entry.isFile() && TEST_FILE.test(entry.name)) found.push(join(shownDir, entry.name));
    }
  };
  visit(target, absolute);
  if (found.length === 0) throw ValidationError.of('', `${target}: no *.test.yaml file in it`, 'NOT_FOUND');
  return found;
}

/** The plain name of a component instance (`Clean up` for `Clean up_<uuid>`). */
function plainName(name: string): string {
  return parseStoredName(name)?.base ?? name;
}

/** The workflow file a test file tests: the one it names (relative to it), else the one beside it with its name. */
function workflowFileOf(file: string, absolute: string, named: string | undefined): string {
  if (named !== undefined) return isAbsolute(named) ? named : join(dirname(file), named);
  const stem = basename(absolute).replace(TEST_FILE, '');
  for (const extension of WORKFLOW_EXTENSIONS) {
    if (existsSync(join(dirname(absolute), `${stem}${extension}`))) return join(dirname(file), `${stem}${extension}`);
  }
  throw ValidationError.of(
    'workflow',
    `names no workflow file, and none is beside the test file: looked for ${WORKFLOW_EXTENSIONS.map((extension) => `${stem}${extension}`).join(', ')}`,
    'MISSING_FIELD',
  );
}

/** The capability of a skill component kind; undefined for any other kind. */
function capabilityOf(kind: string): SkillCapabilityName | undefined {
  const qualified = findComponentDefinition(kind)?.capabilityQualifiedName;
  const entry = Object.entries(SKILL_CAPABILITY_QUALIFIED_NAMES).find(([, name]) => name === qualified);
  return entry?.[0] as SkillCapabilityName | undefined;
}

/** The instances messages entering at `inlet` can reach: along links and to failure handlers, not past `until`. */
function reachable(workflow: WorkflowConfiguration, inlet: string, until: string | undefined): Set<string> {
  const next = new Map<string, string[]>();
  const add = (from: string, to: string): void => void next.set(from, [...(next.get(from) ?? []), to]);
  for (const link of workflow.links) add(link.from, link.to);
  for (const instance of workflow.components) {
    const handler = instance.options.find((option) => option.name === 'failure_handler')?.value;
    if (typeof handler === 'string' && handler !== '') add(instance.name, handler);
  }
  const seen = new Set<string>([inlet]);
  const queue = [inlet];
  for (let name = queue.shift(); name !== undefined; name = queue.shift()) {
    if (name === until) continue;
    for (const to of next.get(name) ?? []) {
      if (seen.has(to)) continue;
      seen.add(to);
      queue.push(to);
    }
  }
  return seen;
}

/** Reads and checks one test file against its workflow; every violation is returned, each naming its field and line. */
function readSuite(file: string): WorkflowTestSuite | FieldViolation[] {
  const absolute = inputPath(file);
  const at = (field: string, line: number | undefined): string => `${file}${line === undefined ? '' : `:${line}`}: ${field}`;
  let read;
  try {
    read = readWorkflowTestText(readWorkflowFileText(file));
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    return error.violations.map((violation) => ({ ...violation, field: violation.field === '' ? file : `${file}: ${violation.field}` }));
  }
  const { file: parsed, lineOf } = read;
  let workflowFile: string;
  let workflow: WorkflowConfiguration;
  try {
    workflowFile = workflowFileOf(file, absolute, parsed.workflow);
    workflow = readWorkflowFile(workflowFile).workflow;
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    return error.violations.map((violation) => ({ ...violation, field: at(violation.field === '' ? 'workflow' : violation.field, lineOf('workflow')) }));
  }
  const names = workflow.components.map((instance) => instance.name);
  const sources = workflow.components.filter((instance) => instance.component.type === 'SOURCE').map((instance) => instance.name);
  const listed = names.map(plainName).join(', ');
  const violations: FieldViolation[] = [];
  const report = (field: string, description: string, reason = 'INVALID_VALUE'): void =>
    void violations.push({ field: at(field, lineOf(field)), description, reason });
  const component = (field: string, given: string): string | undefined => {
    const found = instanceNamed(given, names);
    if (found === undefined)
      report(field, `names no component of workflow '${plainName(workflow.name)}' (${workflowFile}): '${given}'; its components: ${listed}`);
    return found;
  };
  parsed.tests.forEach((test, index) => {
    const base = `tests[${index}]`;
    const inlet = test.inlet === undefined ? sources[0] : component(`${base}.inlet`, test.inlet);
    if (test.inlet !== undefined && inlet !== undefined && !sources.includes(inlet)) report(`${base}.inlet`, `'${test.inlet}' is not a source of the workflow`);
    if (test.inlet === undefined && inlet === undefined) report(`${base}.inlet`, 'the workflow has no source for the input', 'MISSING_FIELD');
    const until = test.until === undefined ? undefined : component(`${base}.until`, test.until);
    if (until !== undefined && sources.includes(until)) report(`${base}.until`, `'${test.until}' is a source: name a component the messages reach after it`);
    for (const name of Object.keys(test.expect)) component(appendJsonPath(`${base}.expect`, name), name);
    for (const name of Object.keys(test.errors ?? {})) component(appendJsonPath(`${base}.errors`, name), name);
    const mocked = new Set<string>();
    for (const name of Object.keys(test.skills ?? {})) {
      const field = appendJsonPath(`${base}.skills`, name);
      const found = component(field, name);
      if (found === undefined) continue;
      const kind = workflow.components.find((instance) => instance.name === found)?.component.qualifiedName ?? '';
      if (capabilityOf(kind) === undefined)
        report(field, `'${name}' is no skill component (a ${findComponentDefinition(kind)?.name ?? kind}): only skills are mocked`);
      mocked.add(found);
    }
    if (inlet === undefined) return;
    for (const name of reachable(workflow, inlet, until)) {
      const instance = workflow.components.find((candidate) => candidate.name === name);
      if (instance === undefined || mocked.has(name) || capabilityOf(instance.component.qualifiedName) === undefined) continue;
      report(
        `${base}.skills`,
        `the input reaches skill component '${plainName(name)}' (skill '${instance.skill?.name ?? ''}'): give its answers under skills.${plainName(name)}; a workflow test calls no skill`,
        'MISSING_FIELD',
      );
    }
  });
  return violations.length > 0 ? violations : { file, workflowFile, workflow, tests: parsed.tests };
}

/** Reads every test file and checks it against its workflow: all of them, or a ValidationError listing every violation of every file. */
export function readSuites(files: readonly string[]): WorkflowTestSuite[] {
  const suites: WorkflowTestSuite[] = [];
  const violations: FieldViolation[] = [];
  for (const file of files) {
    const read = readSuite(file);
    if (Array.isArray(read)) violations.push(...read);
    else suites.push(read);
  }
  if (violations.length > 0) throw new ValidationError(violations);
  return suites;
}

/** The stand-in of a mocked skill component: its answers in order (past the last one, a refusal that fails the test). */
function mockedSkill(kind: string, name: string, mock: WorkflowTestSkillAnswers): ComponentFactory {
  const capability = capabilityOf(kind) as SkillCapabilityName;
  const answerOf = (_message: unknown, index: number): StandInSkillAnswer => {
    if (mock.refusal !== undefined) return { refusal: mock.refusal };
    if (mock.answers === undefined) return { answer: mock.answer };
    if (index < mock.answers.length) return { answer: mock.answers[index] };
    return { refusal: `skills.${name}.answers has ${mock.answers.length} answer(s) and this is message ${index + 1} to the skill` };
  };
  return standInSkillFactory(capability, answerOf);
}

/** What a test expected and what its dry run gave, as the lines of its failure; none when it passed. */
function verdict(workflow: WorkflowConfiguration, test: WorkflowTestCase, outputs: readonly DryRunComponentOutput[]): string[] {
  const names = workflow.components.map((instance) => instance.name);
  const byName = new Map(outputs.map((output) => [output.component, output]));
  const failures: string[] = [];
  for (const [given, expected] of Object.entries(test.expect)) {
    const name = instanceNamed(given, names) as string;
    const output = byName.get(name);
    const sink = workflow.components.find((instance) => instance.name === name)?.component.type === 'SINK';
    const actual = (sink ? output?.received : output?.messages) ?? [];
    const what = sink ? 'took in' : 'emitted';
    if (actual.length !== expected.length) {
      const bodies = actual.slice(0, 3).map((message) => shown(message.body));
      failures.push(
        `${given}: expected ${expected.length} message(s), it ${what} ${actual.length}${bodies.length > 0 ? `: ${bodies.join(', ')}${actual.length > 3 ? ', …' : ''}` : ''}`,
      );
    }
    expected.forEach((matcher, index) => {
      const message = actual[index];
      if (message === undefined) return;
      for (const mismatch of mismatches(matcher, message.body ?? {})) failures.push(`${given}, message ${index + 1}: ${mismatch}`);
    });
  }
  const expectedErrors = new Map(Object.entries(test.errors ?? {}).map(([given, patterns]) => [instanceNamed(given, names) as string, { given, patterns }]));
  for (const output of outputs) {
    const wanted = expectedErrors.get(output.component);
    if (wanted === undefined) {
      for (const error of output.errors) failures.push(`${plainName(output.component)} failed message ${error}`);
      continue;
    }
    if (output.errors.length !== wanted.patterns.length) {
      failures.push(
        `${wanted.given}: expected ${wanted.patterns.length} failure(s), it had ${output.errors.length}${output.errors.length > 0 ? `: ${output.errors.slice(0, 3).join('; ')}` : ''}`,
      );
    }
    wanted.patterns.forEach((pattern, index) => {
      const error = output.errors[index];
      if (error !== undefined && !new RegExp(pattern, 'u').test(error))
        failures.push(`${wanted.given}, failure ${index + 1}: ${shown(error)} does not match /${pattern}/`);
    });
  }
  return failures;
}

/** Runs one test through the dry run, in this process; its failures, or its error when it could not run. */
async function runTest(suite: WorkflowTestSuite, test: WorkflowTestCase, dryRun: DryRunner): Promise<WorkflowTestResult> {
  const started = performance.now();
  const names = suite.workflow.components.map((instance) => instance.name);
  const replacements = new Map<string, ComponentFactory>();
  for (const [given, mock] of Object.entries(test.skills ?? {})) {
    const name = instanceNamed(given, names) as string;
    const kind = suite.workflow.components.find((instance) => instance.name === name)?.component.qualifiedName ?? '';
    replacements.set(name, mockedSkill(kind, given, mock));
  }
  const messages = test.input.map((body, index) => ({ id: `input-${index + 1}`, body, headers: {} }));
  const scope: DryRunScope = { inlet: test.inlet ?? '', until: test.until ?? '', maxMessages: test.max_messages ?? 0, replacements };
  const result = { file: suite.file, workflow: plainName(suite.workflow.name), name: test.name };
  try {
    const failures = verdict(suite.workflow, test, await dryRun(suite.workflow, messages, scope));
    return { ...result, outcome: failures.length === 0 ? 'passed' : 'failed', failures, ms: performance.now() - started };
  } catch (error) {
    const reason =
      error instanceof ValidationError
        ? error.violations.map((v) => (v.field === '' ? v.description : `${v.field}: ${v.description}`)).join('; ')
        : String(error instanceof Error ? error.message : error);
    return { ...result, outcome: 'error', failures: [`the dry run failed: ${reason}`], ms: performance.now() - started };
  }
}

/** Runs every test of every suite, one after the other, each through its own dry run. */
export async function runSuites(
  suites: readonly WorkflowTestSuite[],
  dryRun: DryRunner,
  onResult: (result: WorkflowTestResult) => void = () => undefined,
): Promise<WorkflowTestResult[]> {
  const results: WorkflowTestResult[] = [];
  for (const suite of suites) {
    for (const test of suite.tests) {
      const result = await runTest(suite, test, dryRun);
      onResult(result);
      results.push(result);
    }
  }
  return results;
}
