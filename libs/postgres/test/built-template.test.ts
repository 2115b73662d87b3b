import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { builtTemplateDir, TEMPLATE_STAMP_FILE, templateRecipe } from '../src/index.js';
import { useCleanup } from './harness.js';

describe("the build's template data directory", () => {
  const cleanup = useCleanup();

  /** A package folder with src/ and dist/, dist/ holding a template stamped `stamp` (none when undefined). */
  async function packageWith(stamp: string | undefined): Promise<string> {
    const root = await cleanup.tempDir();
    mkdirSync(join(root, 'src'));
    mkdirSync(join(root, 'dist', 'pgdata-template'), { recursive: true });
    if (stamp !== undefined) writeFileSync(join(root, 'dist', TEMPLATE_STAMP_FILE), stamp);
    return root;
  }

  it('is beside the built module', async () => {
    const root = await packageWith('1.0 without template0');
    expect(builtTemplateDir(join(root, 'dist'), () => '1.0 without template0')).toBe(join(root, 'dist', 'pgdata-template'));
  });

  it("run from the sources, is the package's built one when its stamp is the installed PGlite's recipe", async () => {
    const root = await packageWith('1.0 without template0');
    expect(builtTemplateDir(join(root, 'src'), () => '1.0 without template0')).toBe(join(root, 'dist', 'pgdata-template'));
  });

  it('run from the sources, is none (initdb runs) when the package was not built or its template is stale', async () => {
    const stale = await packageWith('0.9 without template0');
    expect(builtTemplateDir(join(stale, 'src'), () => '1.0 without template0')).toBe(join(stale, 'src', 'pgdata-template'));
    const unbuilt = await packageWith(undefined);
    expect(builtTemplateDir(join(unbuilt, 'src'), () => '1.0 without template0')).toBe(join(unbuilt, 'src', 'pgdata-template'));
  });

  it("names the installed PGlite's version in its recipe", () => {
    expect(templateRecipe()).toMatch(/^\d+\.\d+\.\d+\S* without template0$/);
  });
});
