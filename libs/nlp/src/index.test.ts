import { readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = dirname(fileURLToPath(import.meta.url));

/** Trainers, evaluation and corpus readers: only `@loom/nlp/training` may load them. */
const TRAINING_FILES = [
  'cli.ts',
  'conllu.ts',
  'conllu-annotation.ts',
  'data-dir.ts',
  'eval-command.ts',
  'evaluate.ts',
  'ewt.ts',
  'iob.ts',
  'name-lexicon.ts',
  'ner-data.ts',
  'parser-training.ts',
  'tokenizer-training.ts',
  'train.ts',
  'training.ts',
];

// Static and dynamic relative imports and re-exports; `import type` / `export type` load nothing at run time.
const RELATIVE_IMPORT = /(?:^\s*(import|export)\s+(type\s+)?[^;]*?\bfrom\s+|\bimport\()'(\.{1,2}\/[^']+)\.js'/gm;

/** The source files (relative to src/) that loading `entry` loads. */
function moduleGraph(entry: string): Set<string> {
  const seen = new Set<string>();
  const visit = (file: string): void => {
    const name = relative(SRC, file);
    if (seen.has(name)) return;
    seen.add(name);
    for (const match of readFileSync(file, 'utf8').matchAll(RELATIVE_IMPORT)) {
      if (match[2] !== undefined) continue;
      visit(join(dirname(file), `${match[3]!}.ts`));
    }
  };
  visit(join(SRC, entry));
  return seen;
}

describe('entry points', () => {
  it('the runtime entry loads no trainer, evaluation or corpus reader', () => {
    const runtime = moduleGraph('index.ts');
    expect(runtime).toContain('pipeline.ts');
    expect([...runtime].filter((file) => TRAINING_FILES.includes(file))).toEqual([]);
  });

  it('the training entry reaches the training files (so the check above looks at real imports)', () => {
    const training = moduleGraph('training.ts');
    expect(TRAINING_FILES.filter((file) => !training.has(file) && file !== 'cli.ts' && file !== 'training.ts')).toEqual([]);
  });

  it('the runtime entry exports the pipeline and no trainer', async () => {
    const runtime = await import('./index.js');
    expect(Object.keys(runtime)).toContain('NlpPipeline');
    expect(Object.keys(runtime).filter((name) => /^(train|eval|parseConllu|parseIob|testDataDir|annotationFromConllu)/.test(name))).toEqual([]);
  });
});
