import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { derivedInstanceName, parseWorkflowJson, readWorkflowText, serializeWorkflowJson, workflowToCompact } from '@loom/domain';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliResult, type InProcessLoom, runCli, startLoom } from './loom-in-process.js';

// The compact workflow form through the binary (issue 36): push takes it, export --compact writes it, new scaffolds it,
// component show prints a kind; against a running loom with the config store.

const example = (file: string): string => fileURLToPath(new URL(`../../../examples/${file}`, import.meta.url));
const COMPACT_EXAMPLES = ['article-pipeline.workflow.yaml', 'python-pipeline.workflow.yaml', 'relations.workflow.yaml', 'text-to-graph.workflow.yaml'];

let loom: InProcessLoom;
beforeAll(async () => {
  loom = await startLoom(['--services', 'secrets,config-store,audit', '--set', 'loom.auth.allowAnonymous=true']);
});
afterAll(async () => {
  await loom.stop();
});

const loomAt = (...args: string[]): Promise<CliResult> => runCli(['--address', loom.address, ...args]);
const scratch = (): string => mkdtempSync(join(tmpdir(), 'loom-compact-'));

describe('compact workflow files through loom', () => {
  it.each(COMPACT_EXAMPLES)('pushes %s as it is, twice under the same names (the second unchanged), and stores the full form', async (file) => {
    const text = readFileSync(example(file), 'utf8');
    const { workflow } = readWorkflowText(text, file);
    const first = await loomAt('--output', 'json', 'workflow', 'push', example(file));
    expect(first.stderr).toBe('');
    const { summary } = JSON.parse(first.stdout) as { summary: { name: string; version: number } };
    expect(summary.name).toMatch(new RegExp(`^${workflow.name}_[0-9a-f-]{36}$`));
    const again = JSON.parse((await loomAt('--output', 'json', 'workflow', 'push', example(file))).stdout) as { summary: unknown; unchanged: boolean };
    expect(again).toMatchObject({ summary: { name: summary.name, version: summary.version }, unchanged: true });
    const stored = parseWorkflowJson((await loomAt('workflow', 'get', summary.name)).stdout);
    expect(stored.components.map((component) => component.name)).toEqual(workflow.components.map((component) => component.name));
    expect(serializeWorkflowJson({ ...stored, name: workflow.name })).toBe(serializeWorkflowJson(workflow));

    const exported = await loomAt('workflow', 'export', workflow.name, '--compact');
    expect(exported.status).toBe(0);
    expect(workflowToCompact(readWorkflowText(exported.stdout, 'exported.yaml').workflow)).toEqual({ ...workflowToCompact(workflow), name: summary.name });
  });

  it('exports the full form by default, and the compact one as JSON into a file', async () => {
    const out = join(scratch(), 'exported.workflow.json');
    expect((await loomAt('workflow', 'export', 'Article pipeline', '--compact', '--out', out)).status).toBe(0);
    const compact = JSON.parse(readFileSync(out, 'utf8')) as { components: Record<string, unknown> };
    expect(Object.keys(compact.components)).toEqual(['Articles', 'Clean up', 'Long enough', 'Log']);
    expect((await loomAt('workflow', 'export', 'Article pipeline', '--compact', '--out', out)).stderr).toMatch(/exists; give --force/);
    const full = parseWorkflowJson((await loomAt('workflow', 'export', 'Article pipeline')).stdout);
    expect(full.components[0]?.name).toBe(derivedInstanceName('Article pipeline', 'component', 'Articles'));
  });

  it('refuses a wrong compact file, naming the wrong field with its line in the file, and a close kind for a mistyped one', async () => {
    const file = join(scratch(), 'wrong.workflow.yaml');
    writeFileSync(
      file,
      'name: Wrong\ncomponents:\n  In: source.Inlet\n  parse:\n    kind: sink.Logger\n    options:\n      max_retry: three\n  Out: sink.Loger\nlinks: [In -> parse]\n',
    );
    const pushed = await loomAt('workflow', 'push', file);
    expect(pushed.status).not.toBe(0);
    expect(pushed.stderr).toBe(
      "loom: INVALID_ARGUMENT: components.Out.kind: unknown component type 'sink.Loger': did you mean sink.Logger? (line 8 of wrong.workflow.yaml)\n",
    );
    writeFileSync(file, readFileSync(file, 'utf8').replace('sink.Loger', 'sink.Logger'));
    expect((await loomAt('workflow', 'push', file)).stderr).toMatch(
      /^loom: INVALID_ARGUMENT: components\.parse\.options\.max_retry: .*INTEGER.* \(line 7 of wrong\.workflow\.yaml\); components\.Out: .* is reached from no source: .* \(line 8 of wrong\.workflow\.yaml\)\n$/,
    );
  });

  it('scaffolds a file with `workflow new` that pushes as it is', async () => {
    const file = join(scratch(), 'scaffolded.workflow.yaml');
    const made = await loomAt(
      'workflow',
      'new',
      file,
      '--component',
      'source.Inlet',
      '--component',
      'skill.EntityExtraction',
      '--component',
      'persistence.TokenOccurrenceWriter',
      '--component',
      'loom.components.sink.Logger',
    );
    expect(made.stderr).toBe('');
    const text = readFileSync(file, 'utf8');
    expect(text).toContain('  - Inlet -> Entity Extraction -> Token Occurrence Writer -> Logger\n');
    expect(text).toMatch(/ {6}max_retry: 0 +# Retries of transient errors\n/);
    const pushed = await loomAt('--output', 'json', 'workflow', 'push', file);
    expect(pushed.stderr).toBe('');
    expect(JSON.parse(pushed.stdout)).toMatchObject({ summary: { name: expect.stringMatching(/^scaffolded_/) as unknown } });
    expect((await loomAt('workflow', 'new', file, '--component', 'source.Nothing', '--force')).stderr).toMatch(
      /unknown component type 'source.Nothing'; one of source\.Timer, /,
    );
    expect((await loomAt('workflow', 'new', file, '--component', 'sink.Loger', '--force')).stderr).toBe(
      "loom: unknown component type 'sink.Loger': did you mean sink.Logger?\n",
    );
    expect((await loomAt('workflow', 'new', file, '--force')).stderr).toMatch(/give at least one --component KIND/);
    expect(readFileSync(file, 'utf8')).toBe(text);
  });

  it('shows a component kind: its options with defaults and allowed values, and a snippet that pushes', async () => {
    const shown = await loomAt('component', 'show', 'sink.Logger');
    expect(shown.stderr).toBe('');
    expect(shown.stdout).toMatch(/^level +STRING +"info" +yes +debug\|info\|warn\|error +Log level$/m);
    const snippet = shown.stdout.slice(shown.stdout.indexOf('name: '));
    const file = join(scratch(), 'snippet.workflow.yaml');
    writeFileSync(file, snippet);
    expect((await loomAt('workflow', 'push', file)).status).toBe(0);
    expect(JSON.parse((await loomAt('--output', 'json', 'component', 'show', 'loom.components.source.Timer')).stdout)).toMatchObject({
      qualifiedName: 'loom.components.source.Timer',
    });
  });
});
