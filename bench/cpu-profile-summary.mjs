#!/usr/bin/env node
// Where a process's CPU went while it worked: sums a .cpuprofile's (node --cpu-prof) self time by where the code
// lives, over the samples between the first and the last in a file matching a pattern (the work's window, leaving out
// start-up and waiting). Usage: node bench/cpu-profile-summary.mjs <file.cpuprofile> [pattern of the work's code]
// e.g. the loom profile of `BENCH_CPU_PROF=dir npm run bench -- text-to-graph` with 'executor/dist/components/skills'.
import { readFileSync } from 'node:fs';

const [file, pattern = '.'] = process.argv.slice(2);
if (file === undefined) {
  console.error('usage: node bench/cpu-profile-summary.mjs <file.cpuprofile> [pattern]');
  process.exit(2);
}
const profile = JSON.parse(readFileSync(file, 'utf8'));
const marker = new RegExp(pattern);
const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
let clock = profile.startTime;
const times = profile.timeDeltas.map((delta) => (clock += delta));
const marked = profile.samples.flatMap((id, index) => (marker.test(nodes.get(id).callFrame.url) ? [times[index]] : []));
const from = Math.min(...marked);
const to = Math.max(...marked);

/** Where a frame's code lives, first match wins. */
const PLACES = [
  ['idle', (frame) => frame.functionName === '(idle)'],
  ['garbage collection', (frame) => frame.functionName === '(garbage collector)'],
  ['embedded graph (PGlite: WASM PostgreSQL with AGE)', (frame) => /pglite|electric-sql|^wasm:/.test(frame.url)],
  ['loom NLP models (libs/nlp)', (frame) => /libs\/nlp\//.test(frame.url)],
  ['gRPC (executor ↔ skill gateway)', (frame) => /grpc|protobuf|libs\/contracts/.test(frame.url)],
  ['executor', (frame) => /services\/executor/.test(frame.url)],
  ['skill gateway', (frame) => /services\/skill-gateway/.test(frame.url)],
  ['HTTP client (gateway → skills)', (frame) => /node-fetch|undici/.test(frame.url)],
  ['HTTP server (skills)', (frame) => /fastify|find-my-way|ajv|secure-json-parse|light-my-request|_http_server/.test(frame.url)],
  ['graph store and driver (libs/graph, pg)', (frame) => /libs\/graph\/|node_modules\/pg/.test(frame.url)],
  ['logs and telemetry', (frame) => /opentelemetry|pino/.test(frame.url)],
  ['JSON and other built-ins', (frame) => frame.url === '' && !frame.functionName.startsWith('(')],
  ['Node (sockets, streams, buffers, timers)', (frame) => /^node:|internal\//.test(frame.url)],
];
const sums = new Map();
profile.samples.forEach((id, index) => {
  if (times[index] < from || times[index] > to) return;
  const frame = nodes.get(id).callFrame;
  const place = PLACES.find(([, test]) => test(frame))?.[0] ?? 'other';
  sums.set(place, (sums.get(place) ?? 0) + (profile.timeDeltas[index + 1] ?? 0));
});
const busy = [...sums].reduce((sum, [place, micros]) => (place === 'idle' ? sum : sum + micros), 0);
console.log(`window ${((to - from) / 1e6).toFixed(2)} s, busy ${(busy / 1e6).toFixed(2)} s (${((100 * busy) / (to - from)).toFixed(0)}% of one core)`);
for (const [place, micros] of [...sums].sort((a, b) => b[1] - a[1])) {
  if (place !== 'idle') console.log(`${place.padEnd(52)} ${(micros / 1e6).toFixed(2)} s  ${((100 * micros) / busy).toFixed(1)}%`);
}
