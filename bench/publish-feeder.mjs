// The load generator of bench/publish.bench.mjs, run as its own process (as a user's publisher is): feeds the article
// pipeline of a running `loom serve` one way, waits until its sink has every message that passes the filter, and prints
// one JSON line: { messages, seconds, perSecond, p50Ms, p99Ms, feederCpuUs } (latencies per call or request).
// Usage: node publish-feeder.mjs '<json settings>' with { address, mode, messages, callers, batch, workflow, inlet, sink, webhookUrl, webhookToken,
// token } (token: a bearer token sent on every gRPC call; none when absent).
// With sink '' there is no workflow to wait for (bench/noop-executor-server.mjs): the run ends with the last answer.
import { once } from 'node:events';
import { Agent, request as httpRequest } from 'node:http';
import { ExecutorClient } from '@loom/contracts';
import { call, createClient } from '@loom/service-kit';
import { quantile } from './loom-serve.mjs';
import { samplePayload } from './node-red-baseline.mjs';

const settings = JSON.parse(process.argv[2]);
const { address, mode, messages, callers, batch, workflow, inlet, sink } = settings;
const client = createClient(ExecutorClient, address, { retry: false, deadlineMs: 120_000, ...(settings.token === undefined ? {} : { token: settings.token }) });
const latencies = [];

async function sinkCount() {
  const status = await call(client, 'getWorkflowStatus', { name: workflow });
  return status.components.find((component) => component.name === sink)?.messagesIn ?? 0;
}

/** Runs `callers` loops that each take the next chunk of `size` message indexes until all are handed out. */
async function inParallel(size, send) {
  let next = 0;
  const loop = async () => {
    while (next < messages) {
      const first = next;
      next += size;
      const count = Math.min(size, messages - first);
      const began = performance.now();
      await send(first, count);
      latencies.push(performance.now() - began);
    }
  };
  await Promise.all(Array.from({ length: callers }, loop));
}

const checkAccepted = (results) => {
  const refused = results.find((result) => !result.accepted);
  if (refused !== undefined) throw new Error(`a message was refused: ${JSON.stringify(refused.error)}`);
};

const feeds = {
  // not a publish: the cheapest call the executor answers (no message, no workflow work), as the per-call floor of gRPC here
  async status() {
    await inParallel(1, () => call(client, 'getWorkflowStatus', { name: workflow }));
  },
  async unary() {
    await inParallel(1, (index) => call(client, 'publishMessage', { workflowName: workflow, inlet, body: samplePayload(index), headers: {}, messageId: '' }));
  },
  async batch() {
    await inParallel(batch, async (first, count) => {
      const { results } = await call(client, 'publishMessages', {
        workflowName: workflow,
        inlet,
        messages: Array.from({ length: count }, (_, offset) => ({ body: samplePayload(first + offset), headers: {}, messageId: '' })),
      });
      checkAccepted(results);
    });
  },
  async stream() {
    // one stream, requests of `batch` messages, at most `callers` requests unanswered (as `loom message publish --file`)
    const stream = client.publishStream();
    const sentAt = [];
    let answered;
    stream.on('data', (response) => {
      checkAccepted(response.results);
      latencies.push(performance.now() - sentAt.shift());
      answered?.();
    });
    const ended = once(stream, 'end');
    for (let first = 0; first < messages; first += batch) {
      while (sentAt.length >= callers) await new Promise((resolve) => (answered = resolve));
      const count = Math.min(batch, messages - first);
      sentAt.push(performance.now());
      const request = {
        workflowName: first === 0 ? workflow : '',
        inlet: first === 0 ? inlet : '',
        messages: Array.from({ length: count }, (_, offset) => ({ body: samplePayload(first + offset), headers: {}, messageId: '' })),
      };
      if (!stream.write(request)) await once(stream, 'drain');
    }
    stream.end();
    await ended;
  },
  async webhook() {
    const url = new URL(settings.webhookUrl);
    const agent = new Agent({ keepAlive: true, maxSockets: callers });
    const post = (body, contentType) =>
      new Promise((resolve, reject) => {
        const req = httpRequest(
          {
            host: url.hostname,
            port: url.port,
            path: url.pathname,
            method: 'POST',
            agent,
            headers: { 'content-type': contentType, 'content-length': Buffer.byteLength(body), authorization: `Bearer ${settings.webhookToken}` },
          },
          (response) => {
            const chunks = [];
            response.on('data', (chunk) => chunks.push(chunk));
            response.on('end', () =>
              response.statusCode === 202 ? resolve() : reject(new Error(`webhook answered ${response.statusCode}: ${Buffer.concat(chunks)}`)),
            );
          },
        );
        req.on('error', reject);
        req.end(body);
      });
    await inParallel(batch, (first, count) =>
      count === 1 && batch === 1
        ? post(JSON.stringify(samplePayload(first)), 'application/json')
        : post(JSON.stringify(Array.from({ length: count }, (_, offset) => samplePayload(first + offset))), 'application/json'),
    );
    agent.destroy();
  },
};

const waitsForSink = mode !== 'status' && sink !== '';
const before = waitsForSink ? await sinkCount() : 0;
const started = performance.now();
const cpuBefore = process.cpuUsage();
await feeds[mode]();
// every other sample passes the filter: the run is over once the sink has those
const expected = before + Math.ceil(messages / 2);
while (waitsForSink && (await sinkCount()) < expected) await new Promise((resolve) => setTimeout(resolve, 20));
const seconds = (performance.now() - started) / 1000;
const cpu = process.cpuUsage(cpuBefore);
client.close();
const feederCpuUs = (cpu.user + cpu.system) / messages;
console.log(
  JSON.stringify({ messages, seconds, perSecond: messages / seconds, p50Ms: quantile(latencies, 0.5), p99Ms: quantile(latencies, 0.99), feederCpuUs }),
);
process.exit(0);
