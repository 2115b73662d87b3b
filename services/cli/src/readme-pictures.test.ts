import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readWorkflowText } from '@loom/domain';
import { describe, expect, it } from 'vitest';
import { withWorkflowPictures } from './readme-pictures.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const readme = join(root, 'README.md');
const examples = readdirSync(join(root, 'examples'))
  .filter((file) => /\.workflow\.(json|yaml)$/.test(file))
  .sort()
  .map((file) => ({ file: `examples/${file}`, workflow: readWorkflowText(readFileSync(join(root, 'examples', file), 'utf8'), file).workflow }));

describe("the README's pictures of the examples", () => {
  it('are the ones drawn from examples/ (npm run -w @loom/cli readme redraws them)', () => {
    const text = readFileSync(readme, 'utf8');
    const generated = withWorkflowPictures(text, examples);
    expect(generated, 'README.md has no workflow-pictures markers').toBeDefined();
    if (process.env['UPDATE_README'] === '1' && generated !== text) writeFileSync(readme, generated as string);
    else expect(text).toBe(generated);
  });

  it('show every example', () => {
    const text = readFileSync(readme, 'utf8');
    for (const { file } of examples) expect(text).toContain(`\`loom workflow show ${file}\``);
  });
});
