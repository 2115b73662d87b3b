// Sustained audit appends per second and ack latency with durability on (fdatasync, group commit), 16 concurrent
// clients over gRPC in a separate process (so they do not share the service's core), two ways:
//  - unary: each client one Append call at a time, so it measures grpc-js's per-call cost on this machine;
//  - appender: each client is a process's AuditAppender (its own channel) with PRODUCERS concurrent appends, as an
//    executor running many workflows has; the appender gathers them into AppendBatch calls.
// Baselines in the same run: the same lines appended by one writer with one fdatasync per line (what group commit
// saves), and a bare grpc-js echo server with the same 16 clients (what a unary call costs before loom does anything).
import { fork } from 'node:child_process';
import { openSync, writeSync, fdatasyncSync, closeSync } from 'node:fs';
import { scratchDir } from './scratch.mjs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { AuditClient, AuditEventType } from '@loom/contracts';
import { AuditAppender, auditEvent, call, createClient } from '@loom/service-kit';
import { serveForTest } from '@loom/service-kit/testing';
import { auditModule } from '@loom/audit';

const CLIENTS = 16;
const PRODUCERS = Number(process.env.PRODUCERS ?? 64);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const TOKEN = 'executor-token-for-the-benchmark-01';

function event(index) {
  return auditEvent({ type: AuditEventType.AUDIT_EVENT_TYPE_WORKFLOW_START, workflowName: `Article import ${index % 100}` });
}

const echo = {
  echo: {
    path: '/bench.Echo/Echo',
    requestStream: false,
    responseStream: false,
    requestSerialize: (value) => value,
    requestDeserialize: (value) => value,
    responseSerialize: (value) => value,
    responseDeserialize: (value) => value,
  },
};

/** Runs `once` from `lanes` concurrent loops for SECONDS; the count and latency percentiles of its completions. */
async function load(lanes, once) {
  const latencies = [];
  const deadline = performance.now() + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: lanes }, async (_, lane) => {
      while (performance.now() < deadline) {
        const start = performance.now();
        await once(lane);
        latencies.push(performance.now() - start);
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  return { count: latencies.length, p50: latencies[Math.floor(latencies.length / 2)], p99: latencies[Math.floor(latencies.length * 0.99)] };
}

if (process.argv[2] === 'clients') {
  // the load generator: CLIENTS channels appending as fast as acknowledgements come back, for SECONDS
  const [, , , mode, address] = process.argv;
  let index = 0;
  let result;
  if (mode === 'echo') {
    const Echo = grpc.makeGenericClientConstructor(echo, 'Echo');
    const clients = Array.from({ length: CLIENTS }, () => new Echo(address, grpc.credentials.createInsecure()));
    const payload = Buffer.alloc(200);
    result = await load(CLIENTS, (lane) => new Promise((resolve, reject) => clients[lane].echo(payload, (error) => (error ? reject(error) : resolve()))));
  } else {
    const clients = Array.from({ length: CLIENTS }, () => createClient(AuditClient, address, { token: TOKEN }));
    if (mode === 'unary') {
      result = await load(CLIENTS, (lane) => call(clients[lane], 'append', { event: event(index++) }));
    } else {
      const appenders = clients.map((client) => new AuditAppender(client));
      result = await load(CLIENTS * PRODUCERS, (lane) => appenders[lane % CLIENTS].append(event(index++)));
    }
    for (const client of clients) client.close();
  }
  process.send(result);
  process.exit(0);
}

function runClients(mode, port) {
  return new Promise((resolve, reject) => {
    const child = fork(fileURLToPath(import.meta.url), ['clients', mode, `127.0.0.1:${port}`], { execArgv: [] });
    child.on('message', resolve);
    child.on('exit', (code) => code !== 0 && reject(new Error(`load generator exited with ${code}`)));
  });
}

const report = (label, result) =>
  console.log(`${label}: ${(result.count / SECONDS).toFixed(0)} /s acknowledged, p50 ${result.p50.toFixed(2)} ms, p99 ${result.p99.toFixed(2)} ms`);

const dir = scratchDir('loom-bench-audit-');
const running = await serveForTest([auditModule], [`loom.security.audit.log.path=${join(dir, 'audit.log')}`, `loom.auth.tokens.executor=${TOKEN}`]);
const unary = await runClients('unary', running.port);
report(`audit Append (unary), ${CLIENTS} clients, one call outstanding each`, unary);
const batched = await runClients('appender', running.port);
report(`audit AuditAppender, ${CLIENTS} clients x ${PRODUCERS} concurrent appends (target >= 20,000/s)`, batched);
const rate = batched.count / SECONDS;
const verify = createClient(AuditClient, `127.0.0.1:${running.port}`, { token: TOKEN });
const verdict = await call(verify, 'verify', {});
console.log(`chain verified: ${verdict.ok}, ${verdict.eventsChecked} events`);
verify.close();
await running.stop();

// baseline: one fdatasync per line, one writer, same line size, for 2 s
const line = Buffer.from(
  `${JSON.stringify({ seq: 1, time: new Date().toISOString(), type: 'WORKFLOW_START', workflow: 'Article import 1', component: '', componentType: '', reason: '', actor: 'executor', traceId: '0'.repeat(32), attributes: {}, prev: '0'.repeat(64), hash: '0'.repeat(64) })}\n`,
);
const fd = openSync(join(dir, 'baseline.log'), 'a');
let lines = 0;
const until = performance.now() + 2000;
while (performance.now() < until) {
  writeSync(fd, line);
  fdatasyncSync(fd);
  lines++;
}
closeSync(fd);
const baseline = lines / 2;
console.log(`baseline: one fdatasync per line, one writer: ${baseline.toFixed(0)} lines/s`);
console.log(`ratio audit service (appender) / baseline: ${(rate / baseline).toFixed(1)}x`);

// baseline: a bare grpc-js echo server, same 16 clients, one call outstanding each
const server = new grpc.Server();
server.addService(echo, { echo: (unaryCall, callback) => callback(null, unaryCall.request) });
const port = await new Promise((resolve, reject) =>
  server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))),
);
const bare = await runClients('echo', port);
report(`baseline: bare grpc-js unary echo, ${CLIENTS} clients`, bare);
console.log(`ratio audit Append (unary) / bare grpc-js unary: ${(unary.count / bare.count).toFixed(2)}x`);
server.forceShutdown();
