// Issue 52's Measure: the web console of a real `loom serve` (all six services, the console on loom.console.port)
// on loopback, warm, against the gRPC calls it makes as the baseline, in the same run:
// - first page: GET / and every script and style it names (gzip), then GET /api/session and GET /api/workflows,
//   which is what the browser fetches before the workflows page shows (median of 20, after one warm-up);
// - GET /api/workflows with 200 stored workflows (10 of them running) against ListWorkflows + 200 GetWorkflowStatus
//   with the same concurrency (16) straight to gRPC (median of 10 each);
// - a count change: from PublishMessages' answer to the SSE `counts` event that shows the message at the sink
//   (median and worst of 10), against polling GetWorkflowStatus straight until the sink shows it.
// The load average is printed before and after: the figures swing with it on this shared 2-core machine.
import { call } from '@loom/service-kit';
import { loadNow, mapLimited, ms, runs, startConsoleBench } from './console-helpers.mjs';
import { median } from './loom-serve.mjs';

const WORKFLOWS = 200;
const RUNNING = 10;
const TOKEN = 'console-bench-operator-0123456789';
console.log(`load average before: ${loadNow()}`);
const { loom, consoleUrl, store, executor, names } = await startConsoleBench({ token: TOKEN, prefix: 'bench', workflows: WORKFLOWS, running: RUNNING });
try {
  const signIn = await fetch(`${consoleUrl}/api/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ token: TOKEN }),
  });
  const cookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0];
  const api = (path) =>
    fetch(`${consoleUrl}${path}`, { headers: { cookie } }).then((response) => {
      if (!response.ok) throw new Error(`${path}: ${response.status}`);
      return response.text();
    });

  // first page: index.html, its scripts and styles in parallel, then the session and the workflows
  const index = await (await fetch(`${consoleUrl}/`)).text();
  const assets = [...index.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((match) => match[1]);
  const firstPage = async () => {
    await (await fetch(`${consoleUrl}/`, { headers: { 'accept-encoding': 'gzip' } })).arrayBuffer();
    await Promise.all(assets.map(async (asset) => (await fetch(`${consoleUrl}${asset}`, { headers: { 'accept-encoding': 'gzip' } })).arrayBuffer()));
    await api('/api/session');
    await api('/api/workflows');
  };
  await firstPage();
  const pageTimes = await runs(20, firstPage);

  // the workflows answer against its gRPC calls
  const grpcList = async () => {
    const { workflows } = await call(store, 'listWorkflows', { pageSize: 1000, pageToken: '' });
    await mapLimited(workflows, 16, (summary) => call(executor, 'getWorkflowStatus', { name: summary.name }).catch(() => undefined));
  };
  await grpcList();
  await api('/api/workflows');
  const grpcTimes = await runs(10, grpcList);
  const listTimes = await runs(10, () => api('/api/workflows'));
  const listed = JSON.parse(await api('/api/workflows')).workflows.length;

  // a count change: publish one message, wait for the counts event that shows it at the sink
  const name = names[0];
  const controller = new AbortController();
  const events = await fetch(`${consoleUrl}/api/workflows/${encodeURIComponent(name)}/events`, { headers: { cookie }, signal: controller.signal });
  const reader = events.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  let sinkIn = -1;
  const nextCounts = async () => {
    for (;;) {
      const end = buffer.indexOf('\n\n');
      if (end >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        if (block.startsWith('event: counts')) return JSON.parse(block.slice(block.indexOf('data: ') + 6));
        continue;
      }
      const { value, done } = await reader.read();
      if (done) throw new Error('the event stream ended');
      buffer += value;
    }
  };
  sinkIn = (await nextCounts()).components.c1?.in ?? 0;
  const changeTimes = [];
  const pollTimes = [];
  for (let run = 0; run < 10; run++) {
    await call(executor, 'publishMessages', { workflowName: name, inlet: 'In', messages: [{ messageId: `sse-${run}`, body: { run }, headers: {} }] });
    const published = performance.now();
    for (;;) {
      const counts = await nextCounts();
      const seen = counts.components.c1?.in ?? 0;
      if (seen > sinkIn) {
        sinkIn = seen;
        break;
      }
    }
    changeTimes.push(performance.now() - published);
    // the baseline: the same change read by polling the executor straight, as fast as it answers
    await call(executor, 'publishMessages', { workflowName: name, inlet: 'In', messages: [{ messageId: `poll-${run}`, body: { run }, headers: {} }] });
    const polled = performance.now();
    for (;;) {
      const status = await call(executor, 'getWorkflowStatus', { name });
      const seen = status.components.find((component) => component.name.startsWith('Done'))?.messagesIn ?? 0;
      if (seen > sinkIn) {
        sinkIn = seen;
        break;
      }
    }
    pollTimes.push(performance.now() - polled);
    // the stream has seen the polled message too before the next round
    for (;;) if (((await nextCounts()).components.c1?.in ?? 0) >= sinkIn) break;
  }
  controller.abort();
  store.close();
  executor.close();

  console.log(`\nconsole at ${consoleUrl}; ${listed} workflows listed, ${RUNNING} running; index.html and ${assets.length} assets`);
  console.log(
    `first page (index, assets, /api/session, /api/workflows): median ${ms(median(pageTimes))}, worst ${ms(Math.max(...pageTimes))} (target <= 1000 ms)`,
  );
  console.log(
    `GET /api/workflows (${WORKFLOWS}): median ${ms(median(listTimes))}; its gRPC calls straight: ${ms(median(grpcTimes))}; console / gRPC ${(median(listTimes) / median(grpcTimes)).toFixed(2)}x (target <= 1000 ms)`,
  );
  console.log(
    `count change on the event stream: median ${ms(median(changeTimes))}, worst ${ms(Math.max(...changeTimes))}; polling GetWorkflowStatus straight: median ${ms(median(pollTimes))} (target <= 1000 ms)`,
  );
} finally {
  await loom.stop();
  console.log(`load average after: ${loadNow()}`);
}
