#!/usr/bin/env node
// Assembles loom's production installation from a built checkout: every workspace package's
// runtime files (package.json, dist/, bin/ and data such as models or script hosts, never
// sources or tests) and the production dependencies only (`npm prune --omit=dev`, so native
// addons built by the full install are kept, not rebuilt). The Dockerfile runs it in its build
// stage; deploy/test/production-install.test.ts runs the same script into a temp directory.
//
//   node deploy/image/assemble.mjs <built checkout> <target directory>
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, statSync } from 'node:fs';
import { basename, join, relative, resolve } from 'node:path';

const [source, target] = process.argv.slice(2).map((path) => resolve(path));
if (source === undefined || target === undefined) {
  process.stderr.write('usage: node deploy/image/assemble.mjs <built checkout> <target directory>\n');
  process.exit(2);
}
if (existsSync(target) && readdirSync(target).length > 0) {
  process.stderr.write(`assemble: ${target} is not empty\n`);
  process.exit(2);
}

/** Names that are development-only in a workspace package, at its top level (its node_modules stays: npm prune sorts it). */
// web: the console's page sources (services/console/web), which its build bundles into dist/web
const DEVELOPMENT_ONLY = new Set(['src', 'test', 'web', '.nx', 'vitest.config.ts', 'eslint.config.mjs', 'README.md']);
const isDevelopmentOnly = (name) => DEVELOPMENT_ONLY.has(name) || /^tsconfig.*\.json$/.test(name) || name.endsWith('.tsbuildinfo');

/** The workspace directories of the root package.json (entries `dir` or `dir/*`). */
function workspaces(root) {
  const patterns = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).workspaces ?? [];
  return patterns
    .flatMap((pattern) => {
      if (!pattern.endsWith('/*')) return [join(root, pattern)];
      const parent = join(root, pattern.slice(0, -2));
      return existsSync(parent) ? readdirSync(parent).map((name) => join(parent, name)) : [];
    })
    .filter((dir) => existsSync(join(dir, 'package.json')));
}

mkdirSync(target, { recursive: true });
for (const file of ['package.json', 'package-lock.json']) cpSync(join(source, file), join(target, file));
for (const workspace of workspaces(source)) {
  const into = join(target, relative(source, workspace));
  mkdirSync(into, { recursive: true });
  for (const name of readdirSync(workspace)) {
    if (isDevelopmentOnly(name)) continue;
    cpSync(join(workspace, name), join(into, name), {
      recursive: true,
      filter: (path) => !basename(path).endsWith('.test.js') && !basename(path).endsWith('.test.d.ts'),
    });
  }
  if (JSON.parse(readFileSync(join(workspace, 'package.json'), 'utf8')).exports !== undefined && !existsSync(join(into, 'dist'))) {
    process.stderr.write(`assemble: ${relative(source, workspace)} has no dist/: build first (npx nx run-many -t build)\n`);
    process.exit(1);
  }
}
cpSync(join(source, 'node_modules'), join(target, 'node_modules'), { recursive: true, verbatimSymlinks: true });
execFileSync('npm', ['prune', '--omit=dev', '--offline', '--no-audit', '--no-fund'], { cwd: target, stdio: 'inherit' });

// npm leaves the scope directories of removed packages behind, empty
for (const name of readdirSync(join(target, 'node_modules'))) {
  const dir = join(target, 'node_modules', name);
  if (name.startsWith('@') && statSync(dir).isDirectory() && readdirSync(dir).length === 0) rmdirSync(dir);
}
process.stdout.write(`assemble: production installation in ${target}\n`);
