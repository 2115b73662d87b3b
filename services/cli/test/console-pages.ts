import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { expect } from 'vitest';
import { type InProcessLoom } from './loom-in-process.js';

// What the console's browser tests share: Debian's chromium driven by playwright-core, the pages built once, axe-core's
// check of a page, the keyboard walk and the screenshots for docs/console/.

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const WEB_BUILD = join(ROOT, 'services/console/web/build.mjs');
/** Where the screenshots go when LOOM_CONSOLE_SCREENSHOTS=1 asks for them (never in CI by default). */
const SCREENSHOTS = join(ROOT, 'docs/console');

/** Builds the console's pages into services/console/dist/web (nothing when the build's stamp says they are current). */
export function buildPages(): void {
  execFileSync(process.execPath, [WEB_BUILD], { stdio: ['ignore', 'ignore', 'inherit'] });
}

/** Launches the chromium of LOOM_CHROMIUM (scripts/test-env/chromium.mjs installs it and npm test sets it). */
export async function launchChromium(): Promise<Browser> {
  const executablePath = process.env.LOOM_CHROMIUM;
  if (executablePath === undefined || executablePath === '') {
    throw new TypeError('LOOM_CHROMIUM is not set: run `export $(node scripts/test-env/chromium.mjs)` first (npm test sets it)');
  }
  // --no-sandbox: the tests run as root in CI, where chromium's sandbox refuses to start
  return chromium.launch({ executablePath, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}

/** The console's address of a loom started with `loom.console.port`. */
export function consoleUrl(loom: InProcessLoom): string {
  if (loom.consoleUrl === undefined) throw new TypeError('this loom runs no console: set loom.console.port');
  return loom.consoleUrl;
}

/** A browser context of its own (its own cookies) with a page that records script errors and CSP refusals. */
export async function openPage(browser: Browser): Promise<{ context: BrowserContext; page: Page; problems: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  // as long as the shared expect.poll timeout: a loaded machine answers slowly, never wrongly
  context.setDefaultTimeout(60_000);
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    // a refused request (401 before sign-in, 403 of a forged request) is logged by the browser; that is not a fault
    if (message.type() === 'error' && !message.text().startsWith('Failed to load resource')) problems.push(`console: ${message.text()}`);
  });
  return { context, page, problems };
}

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

interface AxeViolation {
  readonly id: string;
  readonly impact: string | null;
  readonly help: string;
  readonly nodes: { readonly target: unknown }[];
}

/** axe-core's serious and critical violations on the page as it is now (an empty list passes). */
export async function seriousViolations(page: Page): Promise<string[]> {
  // evaluated through the DevTools protocol, which the page's Content-Security-Policy does not govern
  await page.evaluate(AXE_SOURCE);
  const violations = await page.evaluate<AxeViolation[]>(`axe.run(document, { resultTypes: ['violations'] }).then((results) => results.violations)`);
  return violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map((violation) => `${violation.id} (${violation.impact}): ${violation.help} at ${JSON.stringify(violation.nodes.map((node) => node.target))}`);
}

/**
 * Presses Tab from the top of the page until focus comes round again, and answers the actions (enabled buttons,
 * links, inputs, selects) that focus never reached, each by its text or label.
 */
export async function unreachableByKeyboard(page: Page): Promise<string[]> {
  // the page's own script as text: these tests compile without the DOM's types
  const count = await page.evaluate<number>(`(() => {
    const actions = [...document.querySelectorAll('button:not([disabled]), a[href], input:not([disabled]), select:not([disabled])')]
      .filter((element) => element.getClientRects().length > 0);
    actions.forEach((element, index) => element.setAttribute('data-keyboard-check', String(index)));
    document.activeElement?.blur();
    return actions.length;
  })()`);
  const reached = new Set<string>();
  for (let press = 0; press < count * 3 + 10; press += 1) {
    await page.keyboard.press('Tab');
    const index = await page.evaluate<string | null>(`document.activeElement?.getAttribute('data-keyboard-check') ?? null`);
    if (index !== null) reached.add(index);
    if (reached.size === count) break;
  }
  return page.evaluate<string[]>(`[...document.querySelectorAll('[data-keyboard-check]')]
    .filter((element) => !${JSON.stringify([...reached])}.includes(element.getAttribute('data-keyboard-check')))
    .map((element) => element.getAttribute('aria-label') ?? element.textContent?.trim() ?? element.outerHTML.slice(0, 80))`);
}

/** The page passes axe (no serious violations) and every action on it is reachable with the keyboard alone. */
export async function expectAccessible(page: Page): Promise<void> {
  expect(await seriousViolations(page)).toEqual([]);
  expect(await unreachableByKeyboard(page)).toEqual([]);
}

/** Writes docs/console/<name>.png when LOOM_CONSOLE_SCREENSHOTS=1 (so CI and ordinary runs rewrite no files). */
export async function screenshot(page: Page, name: string): Promise<void> {
  if (process.env.LOOM_CONSOLE_SCREENSHOTS !== '1') return;
  mkdirSync(SCREENSHOTS, { recursive: true });
  // the keyboard walk leaves a focus ring behind; the picture shows the page as it is first seen
  await page.evaluate('document.activeElement?.blur()');
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
}
