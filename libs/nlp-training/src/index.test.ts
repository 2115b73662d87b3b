import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import * as runtime from '@loom/nlp';

describe('the training package', () => {
  it('builds on the runtime package, at run time', () => {
    const manifest = JSON.parse(readFileSync(join(dirname(fileURLToPath(import.meta.url)), '..', 'package.json'), 'utf8')) as {
      dependencies?: Record<string, string>;
    };
    expect(Object.keys(manifest.dependencies ?? {})).toContain('@loom/nlp');
  });

  it('exports its trainers and readers, and nothing of the runtime a second time', async () => {
    const training = await import('./index.js');
    expect(Object.keys(training)).toEqual(expect.arrayContaining(['evalNlp', 'parseConllu', 'parseIob', 'testDataDir', 'trainTaggerModel']));
    expect(Object.keys(training).filter((name) => name in runtime)).toEqual([]);
  });
});
