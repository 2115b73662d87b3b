import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from './loom-in-process.js';

// `loom workflow test` runs the dry run in the CLI's own process: no loom is started for any of these tests

const EXAMPLES = fileURLToPath(new URL('../../../examples', import.meta.url));
const ARTICLE_PIPELINE = join(EXAMPLES, 'article-pipeline.workflow.yaml');
const scratch = mkdtempSync(join(tmpdir(), 'loom-workflow-tests-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function write(name: string, text: string): string {
  const path = join(scratch, name);
  writeFileSync(path, text);
  return path;
}

/** An XML element as the test reads a JUnit report. */
interface XmlElement {
  readonly name: string;
  readonly attributes: Record<string, string>;
  readonly children: XmlElement[];
  text: string;
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };
const decode = (text: string): string => text.replace(/&(amp|lt|gt|quot|apos);/g, (_match, name: string) => ENTITIES[name] ?? '');

/** Parses the XML a JUnit report is (declaration, elements, attributes, text, the five entities); throws on anything malformed. */
function parseXml(xml: string): XmlElement {
  const body = xml.replace(/^<\?xml [^?]*\?>\s*/, '');
  const stack: XmlElement[] = [];
  let root: XmlElement | undefined;
  const token = /<\/([\w:-]+)\s*>|<([\w:-]+)((?:\s+[\w:-]+="[^"<]*")*)\s*(\/?)>|([^<]+)/gy;
  for (let match = token.exec(body); match !== null; match = token.exec(body)) {
    const [, closing, opening, attributeText = '', selfClosing, text] = match;
    if (text !== undefined) {
      if (stack.length === 0 && text.trim() !== '') throw new SyntaxError(`text outside the root: ${text}`);
      const parent = stack.at(-1);
      if (parent !== undefined) parent.text += decode(text);
    } else if (closing !== undefined) {
      if (stack.pop()?.name !== closing) throw new SyntaxError(`</${closing}> closes no open element`);
    } else if (opening !== undefined) {
      const attributes = Object.fromEntries(
        [...attributeText.matchAll(/([\w:-]+)="([^"]*)"/g)].map(([, key, value]) => [key as string, decode(value as string)]),
      );
      const element: XmlElement = { name: opening, attributes, children: [], text: '' };
      const parent = stack.at(-1);
      if (parent === undefined) {
        if (root !== undefined) throw new SyntaxError('a second root element');
        root = element;
      } else parent.children.push(element);
      if (selfClosing !== '/') stack.push(element);
    }
    if (token.lastIndex === body.length) break;
  }
  if (token.lastIndex !== body.length && body.slice(token.lastIndex).trim() !== '') throw new SyntaxError(`malformed XML at ${token.lastIndex}`);
  if (root === undefined || stack.length > 0) throw new SyntaxError('unclosed elements');
  return root;
}

const PASSING = `workflow: ${ARTICLE_PIPELINE}
tests:
  - name: keeps a long article
    input:
      - { title: graphs, text: a long enough article about graphs }
    expect:
      Long enough:
        - subset: { title: GRAPHS, words: 6 }
`;

const FAILING = `workflow: ${ARTICLE_PIPELINE}
tests:
  - name: expects the wrong title
    input:
      - { title: graphs, text: a long enough article about graphs }
    expect:
      Clean up:
        - exact: { title: graphs, words: 6 }
      Log:
        - regex: { title: "^NOT" }
  - name: expects a short article to pass & it does not
    input:
      - { title: x, text: too short }
    expect:
      Log:
        - subset: { title: X }
  - name: passes
    input:
      - { title: y, text: one two three four }
    expect:
      Log:
        - subset: { title: Y }
`;

describe('loom workflow test', () => {
  it("runs the shipped examples' tests in process and passes; every example has its tests", async () => {
    const examples = readdirSync(EXAMPLES);
    const tested = examples.filter((file) => file.endsWith('.test.yaml'));
    for (const workflow of examples.filter((file) => /\.workflow\.(ya?ml|json)$/.test(file))) {
      expect(tested, `${workflow} has no tests beside it`).toContain(workflow.replace(/\.workflow\.(ya?ml|json)$/, '.test.yaml'));
    }
    // every file is read and checked against its workflow (--list runs none), then every one runs
    const listed = await runCli(['--output', 'json', 'workflow', 'test', '--list', EXAMPLES]);
    expect(listed.stderr).toBe('');
    const rows = JSON.parse(listed.stdout) as { file: string }[];
    expect(new Set(rows.map((row) => row.file))).toEqual(new Set(tested.map((file) => join(EXAMPLES, file))));
    const junit = join(scratch, 'examples.xml');
    const every = tested.map((file) => join(EXAMPLES, file));
    const run = await runCli(['workflow', 'test', ...every, '--junit', junit]);
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.stdout).not.toMatch(/^(FAIL|ERROR) /m);
    const report = parseXml(readFileSync(junit, 'utf8'));
    expect(report.attributes).toMatchObject({ failures: '0', errors: '0' });
    expect(report.children.map((suite) => suite.attributes['name'])).toEqual(every);
    expect(Number(report.attributes['tests'])).toBe(report.children.reduce((sum, suite) => sum + suite.children.length, 0));
    expect(run.stdout).toMatch(new RegExp(`^${report.attributes['tests']} passed, 0 failed, 0 could not run`, 'm'));
  });

  it('exits 0 on a passing file and 1 on a failing one, saying what differed, in text and in JUnit XML', async () => {
    const passing = write('passing.test.yaml', PASSING);
    const passed = await runCli(['workflow', 'test', passing]);
    expect(passed.stderr).toBe('');
    expect(passed.status).toBe(0);
    expect(passed.stdout).toMatch(/^PASS {2}.*passing\.test\.yaml › keeps a long article \(\d+ ms\)$/m);

    const failing = write('failing.test.yaml', FAILING);
    const junit = join(scratch, 'failing.xml');
    const failed = await runCli(['workflow', 'test', failing, '--junit', junit]);
    expect(failed.status).toBe(1);
    expect(failed.stdout).toContain('Clean up, message 1: exact: title: expected "graphs", got "GRAPHS"');
    expect(failed.stdout).toContain('Clean up, message 1: exact: fields not expected: text');
    expect(failed.stdout).toContain('Log, message 1: regex: title: "GRAPHS" does not match /^NOT/');
    expect(failed.stdout).toContain('Log: expected 1 message(s), it took in 0');
    expect(failed.stdout).toMatch(/^1 passed, 2 failed, 0 could not run \(3 tests in 1 files\)$/m);

    const report = parseXml(readFileSync(junit, 'utf8'));
    expect(report.name).toBe('testsuites');
    expect(report.attributes).toMatchObject({ tests: '3', failures: '2', errors: '0' });
    const [suite] = report.children;
    expect(suite?.attributes).toMatchObject({ name: failing, tests: '3', failures: '2' });
    const cases = suite?.children ?? [];
    expect(cases.map((testCase) => [testCase.attributes['name'], testCase.attributes['classname'], testCase.children.map((child) => child.name)])).toEqual([
      ['expects the wrong title', 'Article pipeline', ['failure']],
      ['expects a short article to pass & it does not', 'Article pipeline', ['failure']],
      ['passes', 'Article pipeline', []],
    ]);
    const failure = cases[0]?.children[0];
    expect(failure?.attributes['message']).toBe('Clean up, message 1: exact: title: expected "graphs", got "GRAPHS"');
    expect(failure?.text.split('\n')).toContain('Log, message 1: regex: title: "GRAPHS" does not match /^NOT/');
  });

  it('mocks skill answers, expects failures by pattern, and fails a test whose skill has no answer left', async () => {
    const tests = write(
      'skills.test.yaml',
      `workflow: ${join(EXAMPLES, 'text-to-graph.workflow.yaml')}
tests:
  - name: a refusing skill fails the message to the failure handler
    until: Entities
    input: [{ id: d1, title: t, text: some text }]
    skills:
      Entities: { refusal: "the pipeline is unknown" }
    errors:
      Entities: ["unknown"]
    expect:
      Failures:
        - regex: { error: "pipeline is unknown" }
  - name: two messages, one answer
    until: Entities
    input: [{ text: first }, { text: second }]
    skills:
      Entities:
        answers:
          - { sentences: [{ index: 0, tokens: [{ index: 1, word: first, originalText: first, ner: O }] }] }
    expect:
      Entities:
        - subset: { text: first, _entities: {} }
`,
    );
    const run = await runCli(['workflow', 'test', tests]);
    expect(run.stdout).toMatch(/^PASS {2}.* › a refusing skill fails the message to the failure handler/m);
    expect(run.stdout).toMatch(/^FAIL {2}.* › two messages, one answer/m);
    expect(run.stdout).toContain('Entities failed message input-2: skills.Entities.answers has 1 answer(s) and this is message 2 to the skill');
    expect(run.status).toBe(1);
  });

  it('refuses bad test files before running anything, naming every file, field and line', async () => {
    const unknownComponent = write(
      'unknown-component.test.yaml',
      `workflow: ${ARTICLE_PIPELINE}
tests:
  - name: names a component that is not there
    input: [{ title: a, text: b }]
    expect:
      Clean up: []
      Publish: []
`,
    );
    const offFormat = write(
      'off-format.test.yaml',
      `workflow: ${ARTICLE_PIPELINE}
tests:
  - name: no matcher, a typo and a bad pattern
    imput: [{ title: a }]
    expect:
      Log:
        - {}
        - regex: { title: "(" }
`,
    );
    const noMock = write(
      'no-mock.test.yaml',
      `workflow: ${join(EXAMPLES, 'text-to-graph.workflow.yaml')}
tests:
  - name: reaches a skill without answers
    input: [{ text: x }]
    skills:
      Write keywords: { answer: {} }
    expect: {}
`,
    );
    const malformed = write('malformed.test.yaml', 'tests: [\n');
    const missingWorkflow = write('lonely.test.yaml', 'tests:\n  - name: t\n    input: [{}]\n    expect: {}\n');
    const run = await runCli(['workflow', 'test', scratch]);
    expect(run.status).toBe(1);
    // nothing ran: the passing and failing files of the earlier test lie in the same directory
    expect(run.stdout).toBe('');
    const errors = run.stderr;
    expect(errors).toMatch(/^loom: INVALID_ARGUMENT: /);
    expect(errors).toContain(
      `${unknownComponent}:7: tests[0].expect.Publish: names no component of workflow 'Article pipeline' (${ARTICLE_PIPELINE}): 'Publish'; its components: Articles, Clean up, Long enough, Log`,
    );
    expect(errors).toContain(`${offFormat}: tests[0].input: `);
    expect(errors).toMatch(/off-format\.test\.yaml: tests\[0\]\.imput: [^;]*\(line 4\)/);
    expect(errors).toMatch(/tests\[0\]\.expect\.Log\[0\]: give exact, subset or regex \(or several: all must hold\) \(line 7\)/);
    expect(errors).toMatch(/tests\[0\]\.expect\.Log\[1\]\.regex\.title: not a regular expression: [^;]*\(line 8\)/);
    expect(errors).toContain(
      `${noMock}:6: tests[0].skills["Write keywords"]: 'Write keywords' is no skill component (a Graph Database Writer): only skills are mocked`,
    );
    expect(errors).toContain(
      `${noMock}:5: tests[0].skills: the input reaches skill component 'Entities' (skill 'annotation'): give its answers under skills.Entities; a workflow test calls no skill`,
    );
    expect(errors).toContain(`${malformed}: malformed YAML at line 2, column 1`);
    expect(errors).toContain(
      `${missingWorkflow}: workflow: names no workflow file, and none is beside the test file: looked for lonely.workflow.yaml, lonely.workflow.yml, lonely.workflow.json`,
    );
    // the same for a directory with no test file in it
    const empty = mkdtempSync(join(scratch, 'empty-'));
    const none = await runCli(['workflow', 'test', empty]);
    expect(none.status).toBe(1);
    expect(none.stderr).toBe(`loom: INVALID_ARGUMENT: ${empty}: no *.test.yaml file in it\n`);
  });
});
