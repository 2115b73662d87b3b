#!/usr/bin/env node
// Builds the console's pages (web/) with Vite into dist/web, the static files the console's backend serves: one
// index.html, hashed scripts and styles, no inline script (the Content-Security-Policy allows none) and nothing
// loaded from another origin. The build is skipped when dist/web was built from the same sources and the same
// package versions (a stamp beside it), so `npm test`'s build pays for it once per change. `--check` type-checks
// the pages first (tsc -p web/tsconfig.json), as `npm run build` does; `--force` builds even when the stamp matches.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const WEB = dirname(fileURLToPath(import.meta.url));
const PACKAGE = join(WEB, '..');
const OUT = join(PACKAGE, 'dist', 'web');
const STAMP = join(OUT, '.build-stamp');

/** Every file the build reads from web/, in a stable order. */
function sources(dir = WEB) {
  return readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.name !== 'node_modules')
    .sort((a, b) => a.name.localeCompare(b.name))
    .flatMap((entry) => (entry.isDirectory() ? sources(join(dir, entry.name)) : [join(dir, entry.name)]));
}

/** A hash of the sources and of the versions of the packages they bundle. */
function inputsHash() {
  const hash = createHash('sha256');
  for (const file of sources()) hash.update(relative(WEB, file)).update('\0').update(readFileSync(file)).update('\0');
  const require = createRequire(join(PACKAGE, 'package.json'));
  const { devDependencies } = JSON.parse(readFileSync(join(PACKAGE, 'package.json'), 'utf8'));
  for (const name of Object.keys(devDependencies).sort()) {
    let version = 'missing';
    try {
      version = JSON.parse(readFileSync(require.resolve(`${name}/package.json`), 'utf8')).version;
    } catch {
      // a package without an exported package.json: its pinned range stands for it
      version = devDependencies[name];
    }
    hash.update(`${name}@${version}\0`);
  }
  return hash.digest('hex');
}

const started = performance.now();
const args = new Set(process.argv.slice(2));
const hash = inputsHash();
if (!args.has('--force') && existsSync(STAMP) && readFileSync(STAMP, 'utf8') === hash) {
  process.stderr.write('console web: dist/web is up to date\n');
  process.exit(0);
}
if (args.has('--check')) {
  execFileSync(process.execPath, [createRequire(import.meta.url).resolve('typescript/bin/tsc'), '-p', join(WEB, 'tsconfig.json')], { stdio: 'inherit' });
}
// React's and React Router's production builds (Vite picks the `production` export condition from NODE_ENV)
process.env.NODE_ENV = 'production';
const { build } = await import('vite');
await build({
  root: WEB,
  mode: 'production',
  base: '/',
  logLevel: 'warn',
  configFile: false,
  publicDir: false,
  esbuild: { jsx: 'automatic' },
  build: {
    outDir: OUT,
    emptyOutDir: true,
    // Vite's polyfill for <link rel=modulepreload> would be inline script, which the CSP refuses; every browser the
    // console supports has modulepreload
    modulePreload: { polyfill: false },
    // no inline data: URLs either (the CSP allows 'self' only)
    assetsInlineLimit: 0,
    chunkSizeWarningLimit: 1024,
    reportCompressedSize: false,
    rollupOptions: {
      onwarn(warning, warn) {
        // React Router and React Flow mark their modules "use client" for server components; in a browser bundle
        // that means nothing
        if (warning.code === 'MODULE_LEVEL_DIRECTIVE') return;
        warn(warning);
      },
    },
  },
});
writeFileSync(STAMP, hash);
process.stderr.write(`console web: built dist/web in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
