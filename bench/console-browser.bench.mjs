// Issue 52's Measure as a person sees it: the console of a real `loom serve` in Debian's chromium (playwright-core),
// on loopback, warm, against the gRPC calls behind each figure, in the same run:
// - the workflows page shown: from navigating to the console (signed in) until the table holds all 200 stored
//   workflows (median of 10, after one warm-up), against ListWorkflows + 200 GetWorkflowStatus straight to gRPC
//   (16 at a time, as the console makes them);
// - a workflow page shown: from navigating to it until its picture shows the components' counts (median of 10);
// - a count change on screen: from PublishMessages' answer until the sink's `in` count on the workflow page shows
//   the message (checked on every animation frame; median and worst of 10), against polling GetWorkflowStatus
//   straight until the sink shows it.
// The load average is printed before and after: the figures swing with it on this shared 2-core machine.
import { call } from '@loom/service-kit';
import { chromium } from 'playwright-core';
import { ensureChromium } from '../scripts/test-env/chromium.mjs';
import { loadNow, mapLimited, ms, runs, startConsoleBench } from './console-helpers.mjs';
import { median } from './loom-serve.mjs';

const WORKFLOWS = 200;
const RUNNING = 10;
const RUNS = 10;
const TOKEN = 'console-browser-bench-operator-0123456789';
console.log(`load average before: ${loadNow()}`);
const { LOOM_CHROMIUM } = await ensureChromium();
const { loom, consoleUrl, store, executor, names } = await startConsoleBench({ token: TOKEN, prefix: 'page', workflows: WORKFLOWS, running: RUNNING });
const browser = await chromium.launch({ executablePath: LOOM_CHROMIUM, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  const page = await context.newPage();
  await page.goto(consoleUrl);
  await page.getByLabel('Operator token').fill(TOKEN);
  await page.getByRole('button', { name: 'Sign in with the token' }).click();
  await page
    .locator('tbody tr')
    .nth(WORKFLOWS - 1)
    .waitFor();

  // the workflows page, from navigation to all its rows, against its gRPC calls
  // where the time goes, from the page's own timings: its script run (DOMContentLoaded), and when the workflows'
  // answer was asked for and arrived (ms since the navigation started)
  const parts = { scriptsDone: [], listAsked: [], listAnswered: [] };
  const workflowsPage = async () => {
    await page.goto('about:blank');
    await page.goto(`${consoleUrl}/#/workflows`);
    await page
      .locator('tbody tr')
      .nth(WORKFLOWS - 1)
      .waitFor();
    const timing = await page.evaluate(
      // runs in the page
      () => {
        const navigation = performance.getEntriesByType('navigation')[0];
        const list = performance.getEntriesByType('resource').find((entry) => entry.name.endsWith('/api/workflows'));
        return { scriptsDone: navigation?.domContentLoadedEventEnd ?? NaN, listAsked: list?.startTime ?? NaN, listAnswered: list?.responseEnd ?? NaN };
      },
    );
    for (const [part, value] of Object.entries(timing)) parts[part].push(value);
  };
  await workflowsPage();
  for (const values of Object.values(parts)) values.length = 0;
  const pageTimes = await runs(RUNS, workflowsPage);
  const grpcList = async () => {
    const { workflows } = await call(store, 'listWorkflows', { pageSize: 1000, pageToken: '' });
    await mapLimited(workflows, 16, (summary) => call(executor, 'getWorkflowStatus', { name: summary.name }).catch(() => undefined));
  };
  await grpcList();
  const grpcTimes = await runs(RUNS, grpcList);

  // one workflow's page, from navigation to its picture with counts (its chunk cached after the first)
  const name = names[0];
  const sinkIn = page.locator('.component:has(.component-name:text-is("Done")) [data-count="in"]');
  const workflowPage = async () => {
    await page.goto('about:blank');
    await page.goto(`${consoleUrl}/#/workflows/${encodeURIComponent(name)}`);
    await sinkIn.waitFor();
  };
  await workflowPage();
  const detailTimes = await runs(RUNS, workflowPage);

  // a count change on screen against polling the executor straight
  let seen = Number(await sinkIn.textContent());
  const changeTimes = [];
  const pollTimes = [];
  for (let run = 0; run < RUNS; run++) {
    await call(executor, 'publishMessages', { workflowName: name, inlet: 'In', messages: [{ messageId: `screen-${run}`, body: { run }, headers: {} }] });
    const published = performance.now();
    seen += 1;
    await page.waitForFunction(
      // runs in the page
      /* global document */
      (expected) => {
        const box = [...document.querySelectorAll('.component')].find((candidate) => candidate.querySelector('.component-name')?.textContent === 'Done');
        return Number(box?.querySelector('[data-count="in"]')?.textContent ?? -1) >= expected;
      },
      seen,
      { polling: 'raf' },
    );
    changeTimes.push(performance.now() - published);
    await call(executor, 'publishMessages', { workflowName: name, inlet: 'In', messages: [{ messageId: `poll-${run}`, body: { run }, headers: {} }] });
    const polled = performance.now();
    seen += 1;
    for (;;) {
      const status = await call(executor, 'getWorkflowStatus', { name });
      if ((status.components.find((component) => component.name.startsWith('Done'))?.messagesIn ?? 0) >= seen) break;
    }
    pollTimes.push(performance.now() - polled);
  }
  await context.close();
  store.close();
  executor.close();

  console.log(`\nconsole at ${consoleUrl} in chromium ${browser.version()}; ${WORKFLOWS} workflows stored, ${RUNNING} running`);
  console.log(
    `workflows page shown (${WORKFLOWS} rows): median ${ms(median(pageTimes))}, worst ${ms(Math.max(...pageTimes))}; its gRPC calls straight: ${ms(median(grpcTimes))}; page / gRPC ${(median(pageTimes) / median(grpcTimes)).toFixed(2)}x (target <= 1000 ms)`,
  );
  console.log(
    `  of which (medians, ms from the navigation's start): scripts run ${ms(median(parts.scriptsDone))}, GET /api/workflows asked ${ms(median(parts.listAsked))} and answered ${ms(median(parts.listAnswered))} (${ms(median(parts.listAnswered) - median(parts.listAsked))} in flight)`,
  );
  console.log(`a workflow's page shown with its counts: median ${ms(median(detailTimes))}, worst ${ms(Math.max(...detailTimes))} (target <= 1000 ms)`);
  console.log(
    `count change on screen after PublishMessages answered: median ${ms(median(changeTimes))}, worst ${ms(Math.max(...changeTimes))}; polling GetWorkflowStatus straight: median ${ms(median(pollTimes))} (target <= 1000 ms)`,
  );
} finally {
  await browser.close();
  await loom.stop();
  console.log(`load average after: ${loadNow()}`);
}
