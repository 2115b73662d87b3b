import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The file beside the build's template that names what made it (see templateRecipe). */
export const TEMPLATE_STAMP_FILE = 'pgdata-template.version';

/**
 * What the build's template data directory is stamped with (dist/pgdata-template.version, written by
 * scripts/make-template.mjs): the version of the installed PGlite and how the template was made. A template whose
 * stamp differs was made by another PGlite or another recipe and is made again (by the build) or not used (from the
 * sources).
 */
export function templateRecipe(): string {
  // the package exports no ./package.json: read it beside its dist/
  const pgliteDist = dirname(createRequire(import.meta.url).resolve('@electric-sql/pglite'));
  const { version } = JSON.parse(readFileSync(join(dirname(pgliteDist), 'package.json'), 'utf8')) as { version: string };
  return `${version} without template0`;
}

/**
 * Where the template data directory the build makes is, for the module in `moduleDir`. Built, the module sits in
 * dist/ beside the template. Run from its sources (vitest resolves workspace packages to src/, so every test's embedded
 * PostgreSQL and AGE graph starts here), the template is the package's dist/ one when the
 * package was built and the template's stamp is `recipe`; otherwise a path that does not exist, and initdb runs as
 * before. Copying the template instead of running initdb saves each fresh start about 3.5 s of CPU and many small
 * file writes (libs/postgres/test/built-template.test.ts).
 */
export function builtTemplateDir(moduleDir: string, recipe: () => string = templateRecipe): string {
  const beside = join(moduleDir, 'pgdata-template');
  if (basename(moduleDir) !== 'src') return beside;
  const dist = join(moduleDir, '..', 'dist');
  const stamp = join(dist, TEMPLATE_STAMP_FILE);
  if (!existsSync(stamp) || readFileSync(stamp, 'utf8') !== recipe()) return beside;
  return join(dist, 'pgdata-template');
}

/** The template a fresh embedded PostgreSQL is copied from unless its options name another (see builtTemplateDir). */
export const BUILT_TEMPLATE_DIR = builtTemplateDir(dirname(fileURLToPath(import.meta.url)));
