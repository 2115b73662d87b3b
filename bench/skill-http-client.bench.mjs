// The skill gateway's HTTP client alone (issue 51, Must 5): the two exchanges a text-to-graph document makes with the
// skills process (a small request answered with the ~43 KB annotation, then the annotation sent to the keyword skill
// and a small answer), four at a time, against a stand-in skill in a process of its own on loopback. The gateway's
// httpPost (undici's Pool, a dispatch handler of its own) against the baseline: node:http on a keep-alive Agent of the
// same size, as the gateway called skills before. Rounds alternate; each figure is the median over BENCH_ROUNDS
// (default 5) of this process's CPU (process.cpuUsage: the client's side only) a document.
import { spawn } from 'node:child_process';
import { Agent, request } from 'node:http';
import { loadavg } from 'node:os';
import { httpPost, skillPool } from '@loom/skill-gateway';
import { median } from './loom-serve.mjs';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const DOCUMENTS = Number(process.env.BENCH_DOCUMENTS ?? 2000);
const CONCURRENCY = 4;
const ANNOTATION_BYTES = 43_000;

// the stand-in skill: answers /annotate with ANNOTATION_BYTES, anything else with a short keyword list
const SKILL = `
const { createServer } = require('node:http');
const annotation = Buffer.alloc(${ANNOTATION_BYTES}, 'a');
const keywords = Buffer.from('[{"value":"loom","relevance":1}]');
const server = createServer((req, res) => {
  req.on('data', () => undefined);
  req.on('end', () => {
    const body = req.url === '/annotate' ? annotation : keywords;
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
    res.end(body);
  });
});
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
`;

const headers = { 'content-type': 'application/json', accept: 'application/json', traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00' };
const text = Buffer.from(JSON.stringify({ text: 'Loom moves documents to the graph.', pipeline: 'technology' }));
const annotation = Buffer.alloc(ANNOTATION_BYTES, 'b');

/** The gateway's client before: node:http on a keep-alive Agent, the answer's chunks concatenated. */
function nodeHttpPost(url, body, agent) {
  return new Promise((resolve, reject) => {
    const outgoing = request(
      url,
      { method: 'POST', headers: { ...headers, 'content-length': String(body.byteLength) }, agent, signal: AbortSignal.timeout(30_000) },
      (response) => {
        const chunks = [];
        response.on('data', (chunk) => chunks.push(chunk));
        response.on('error', reject);
        response.on('end', () => resolve({ status: response.statusCode, body: Buffer.concat(chunks) }));
      },
    );
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}

/** CPU microseconds of this process a document: two exchanges, CONCURRENCY documents at a time. */
async function cpuPerDocument(post, count) {
  let next = 0;
  const before = process.cpuUsage();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next++ < count) {
        const answered = await post('/annotate', text);
        if (answered.body.byteLength !== ANNOTATION_BYTES) throw new Error(`the annotation came back with ${answered.body.byteLength} bytes`);
        await post('/extractKeywords', annotation);
      }
    }),
  );
  const used = process.cpuUsage(before);
  return (used.user + used.system) / count;
}

const skill = spawn(process.execPath, ['-e', SKILL], { stdio: ['ignore', 'pipe', 'inherit'] });
const port = await new Promise((resolve) => skill.stdout.once('data', (data) => resolve(Number(String(data)))));
const origin = `http://127.0.0.1:${port}`;
const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY, maxTotalSockets: CONCURRENCY });
const pool = skillPool(origin, CONCURRENCY);
const clients = {
  'node:http, keep-alive Agent (before)': (path, body) => nodeHttpPost(new URL(path, origin), body, agent),
  "httpPost: undici's Pool, a dispatch handler": (path, body) =>
    httpPost({ url: new URL(path, origin), headers, body, pool, signal: AbortSignal.timeout(30_000) }),
};
try {
  console.log(`load average ${loadavg()[0].toFixed(2)}; ${DOCUMENTS} documents a round, ${CONCURRENCY} at a time, ${ROUNDS} rounds alternating`);
  for (const post of Object.values(clients)) await cpuPerDocument(post, 200); // warm-up
  const figures = new Map(Object.keys(clients).map((name) => [name, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, post] of Object.entries(clients)) figures.get(name).push(await cpuPerDocument(post, DOCUMENTS));
  }
  const [before, after] = [...figures.values()].map(median);
  for (const [name, values] of figures)
    console.log(`${name}: ${median(values).toFixed(0)} µs of client CPU a document (${values.map((value) => value.toFixed(0)).join(', ')})`);
  console.log(`httpPost / node:http: ${(after / before).toFixed(2)}x; load average after ${loadavg()[0].toFixed(2)}`);
} finally {
  skill.kill();
  agent.destroy();
  await pool.destroy();
}
