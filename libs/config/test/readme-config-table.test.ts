import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { configKeys, withConfigTable } from '../src/index.js';

const readme = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'README.md');

describe("the README's configuration table", () => {
  it('is the one generated from the key table (npm run -w @loom/config readme rewrites it)', () => {
    const text = readFileSync(readme, 'utf8');
    const generated = withConfigTable(text);
    expect(generated, 'README.md has no config-keys markers').toBeDefined();
    if (process.env['UPDATE_README'] === '1' && generated !== text) writeFileSync(readme, generated as string);
    else expect(text).toBe(generated);
  });

  it('lists every key once, with its environment variable', () => {
    const text = readFileSync(readme, 'utf8');
    for (const row of configKeys) expect(text.split(`| \`${row.key}\` | \`${row.env}\` |`)).toHaveLength(2);
  });
});
