#!/usr/bin/env node
// Part of the build: runs PGlite's initdb once into dist/pgdata-template, a cleanly closed, empty data directory
// without template0 (makeTemplateDataDir says why). A fresh embedded PostgreSQL copies it instead of running initdb
// itself (about 2.5 s and 450 MB of WebAssembly memory that a process never gives back). Made by the installed PGlite,
// so it always matches it; the stamp names the recipe too, so a template made the old way is made again.
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeTemplateDataDir, TEMPLATE_STAMP_FILE, templateRecipe } from '../dist/index.js';

const dist = join(dirname(dirname(fileURLToPath(import.meta.url))), 'dist');
const target = join(dist, 'pgdata-template');
const stamp = join(dist, TEMPLATE_STAMP_FILE);
const recipe = templateRecipe();
if (existsSync(join(target, 'PG_VERSION')) && existsSync(stamp) && readFileSync(stamp, 'utf8') === recipe) process.exit(0);

const building = mkdtempSync(join(dist, '.pgdata-template-'));
await makeTemplateDataDir(building);
rmSync(target, { recursive: true, force: true });
renameSync(building, target);
writeFileSync(stamp, recipe);
