// Sustained audit appends per second and ack latency with durability on (fdatasync, group commit), 16 concurrent
// clients over gRPC in a separate process (so they do not share the service's core), against a baseline in the same
// run: the same lines appended by one writer with one fdatasync per line, which is what group commit saves.
import { fork } from 'node:child_process';
import { mkdtempSync, openSync, writeSync, fdatasyncSync, closeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AuditClient, AuditEventType } from '@loom/contracts';
import { call, createClient } from '@loom/service-kit';
import { serveForTest } from '@loom/service-kit/testing';
import { auditModule } from '@loom/audit';

const CLIENTS = 16;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const TOKEN = 'executor-token-for-the-benchmark-01';

function event(index) {
  return {
    sequence: 0, time: undefined, type: AuditEventType.AUDIT_EVENT_TYPE_WORKFLOW_START, workflowName: `Article import ${index % 100}`,
    componentName: '', componentType: '', reason: '', actor: '', traceId: '', prevHash: '', hash: '', attributes: {},
  };
}

if (process.argv[2] === 'clients') {
  // the load generator: CLIENTS channels appending as fast as acknowledgements come back, for SECONDS
  const address = process.argv[3];
  const clients = Array.from({ length: CLIENTS }, () => createClient(AuditClient, address, { token: TOKEN }));
  const latencies = [];
  const deadline = performance.now() + SECONDS * 1000;
  let index = 0;
  await Promise.all(clients.map(async (client) => {
    while (performance.now() < deadline) {
      const start = performance.now();
      await call(client, 'append', { event: event(index++) });
      latencies.push(performance.now() - start);
    }
  }));
  for (const client of clients) client.close();
  latencies.sort((a, b) => a - b);
  process.send({ count: latencies.length, p50: latencies[Math.floor(latencies.length / 2)], p99: latencies[Math.floor(latencies.length * 0.99)] });
  process.exit(0);
}

const dir = mkdtempSync(join(tmpdir(), 'loom-bench-audit-'));
const running = await serveForTest([auditModule], [`loom.security.audit.log.path=${join(dir, 'audit.log')}`, `loom.auth.tokens.executor=${TOKEN}`]);
const result = await new Promise((resolve, reject) => {
  const child = fork(fileURLToPath(import.meta.url), ['clients', `127.0.0.1:${running.port}`], { execArgv: [] });
  child.on('message', resolve);
  child.on('exit', (code) => code !== 0 && reject(new Error(`load generator exited with ${code}`)));
});
const rate = result.count / SECONDS;
console.log(`audit Append, ${CLIENTS} clients, ${SECONDS} s: ${rate.toFixed(0)} events/s acknowledged, p50 ${result.p50.toFixed(2)} ms, p99 ${result.p99.toFixed(2)} ms (target >= 20,000/s)`);
const verify = createClient(AuditClient, `127.0.0.1:${running.port}`, { token: TOKEN });
const verdict = await call(verify, 'verify', {});
console.log(`chain verified: ${verdict.ok}, ${verdict.eventsChecked} events`);
verify.close();
await running.stop();

// baseline: one fdatasync per line, one writer, same line size, for 2 s
const line = Buffer.from(`${JSON.stringify({ seq: 1, time: new Date().toISOString(), type: 'WORKFLOW_START', workflow: 'Article import 1', component: '', componentType: '', reason: '', actor: 'executor', traceId: '0'.repeat(32), attributes: {}, prev: '0'.repeat(64), hash: '0'.repeat(64) })}\n`);
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
console.log(`ratio audit service / baseline: ${(rate / baseline).toFixed(1)}x`);
