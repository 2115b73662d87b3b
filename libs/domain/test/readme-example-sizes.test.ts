import { readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { exampleSizesTable, withExampleSizesTable } from './example-sizes.js';

const readme = new URL('../../../README.md', import.meta.url);

describe("the README's table of example sizes", () => {
  it('is the one generated from examples/ (npm run -w @loom/domain readme rewrites it)', () => {
    const text = readFileSync(readme, 'utf8');
    const generated = withExampleSizesTable(text);
    expect(generated, 'README.md has no example-sizes markers').toBeDefined();
    if (process.env['UPDATE_README'] === '1' && generated !== text) writeFileSync(readme, generated as string);
    else expect(text).toBe(generated);
  });

  it('meets the target: text-to-graph in at most 60 lines in the compact form', () => {
    const row = exampleSizesTable()
      .split('\n')
      .find((line) => line.startsWith('| `text-to-graph.'));
    expect(Number(row?.split('|')[5])).toBeLessThanOrEqual(60);
  });
});
