#!/usr/bin/env node
// The browser the console's browser tests drive: Debian's chromium, installed with apt-get when missing (as the
// PostgreSQL and deploy tools are), never a browser download. playwright-core launches it by its path. Run directly,
// it prints the environment for the tests (`export $(node scripts/test-env/chromium.mjs)`, then run one browser test
// file).
import { existsSync } from 'node:fs';
import { ensurePackages } from './apt.mjs';
import { TestEnvError, printEnvWhenRun } from './log.mjs';

/** Where Debian's package puts the browser's launcher. */
const CHROMIUM = '/usr/bin/chromium';

/** Environment for the browser tests: LOOM_CHROMIUM, the browser's path; chromium (and its fonts) installed when missing. */
export async function ensureChromium() {
  // fonts-liberation: a page's text needs a font; the package recommends one, and apt.mjs installs no recommends
  ensurePackages(['chromium', 'fonts-liberation']);
  if (!existsSync(CHROMIUM)) throw new TestEnvError(`Debian's chromium package is installed but ${CHROMIUM} is missing`);
  return { LOOM_CHROMIUM: CHROMIUM };
}

await printEnvWhenRun(import.meta.url, ensureChromium, 'prepare the browser');
