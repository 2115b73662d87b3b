import { readdirSync, readFileSync } from 'node:fs';
import { readWorkflowText, serializeCompactWorkflow, serializeWorkflowJson } from '../src/index.js';

// The README's table of example sizes (issue 36's measure): each example of examples/ in the full form and in the
// compact form, one of which is the file itself and the other made from it by the converter.

const BEGIN = '<!-- example-sizes: generated from examples/ by `npm run -w @loom/domain readme`; do not edit -->';
const END = '<!-- end of example-sizes -->';

const examples = new URL('../../../examples/', import.meta.url);

const lines = (text: string): number => text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
const bytes = (text: string): number => Buffer.byteLength(text, 'utf8');

/** The table's Markdown, one row per example file. */
export function exampleSizesTable(): string {
  const rows = readdirSync(examples)
    .filter((file) => /\.workflow\.(json|ya?ml)$/.test(file))
    .sort()
    .map((file) => {
      const text = readFileSync(new URL(file, examples), 'utf8');
      const { workflow, form } = readWorkflowText(text, file);
      const full = form === 'full' ? text : serializeWorkflowJson(workflow);
      const compact = form === 'compact' ? text : serializeCompactWorkflow(workflow);
      const share = `${Math.round((100 * bytes(compact)) / bytes(full))} %`;
      return `| \`${file}\` | ${form} | ${lines(full)} | ${bytes(full)} | ${lines(compact)} | ${bytes(compact)} | ${share} |`;
    });
  return ['| example | file in | full lines | full bytes | compact lines | compact bytes | compact / full |', '|---|---|--:|--:|--:|--:|--:|', ...rows].join(
    '\n',
  );
}

/** The README text with the table between its markers replaced by the generated one; undefined when the markers are missing. */
export function withExampleSizesTable(readme: string): string | undefined {
  const start = readme.indexOf(BEGIN);
  const end = readme.indexOf(END);
  if (start < 0 || end < start) return undefined;
  return `${readme.slice(0, start + BEGIN.length)}\n${exampleSizesTable()}\n${readme.slice(end)}`;
}
