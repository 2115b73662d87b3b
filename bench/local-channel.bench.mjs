// The executor's InvokeSkillBatch to the skill gateway of its own process (issue 51, Must 5), transport alone: a stand-in
// gateway that answers each request with its own body (no skill, no HTTP) behind startServices, called with batches of
// 32 requests of BENCH_BODY_BYTES (default 43,000: the text-to-graph job's annotation) by the executor's own clients,
// which call it in memory (LocalChannel), and by a grpc-js client with the executor's token and the same tracing
// interceptor over the process's port (the path before issue 51), the baseline. Rounds alternate; each figure is the
// median over BENCH_ROUNDS (default 5) of the process's CPU (process.cpuUsage: both ends are in it) a request.
import { loadavg } from 'node:os';
import { SkillGatewayClient, SkillGatewayService } from '@loom/contracts';
import { loadConfig } from '@loom/config';
import { call, createClient, startServices, unimplemented } from '@loom/service-kit';
import { capturedLogger } from '@loom/service-kit/testing';
import { clientTracingInterceptor } from '@loom/telemetry/grpc';
import { median } from './loom-serve.mjs';

const BODY_BYTES = Number(process.env.BENCH_BODY_BYTES ?? 43_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const BATCH = 32;
const BATCHES = 40;
const TOKEN = 'bench-local-channel-executor-token';

/** A skill gateway whose InvokeSkillBatch answers each request with its body, as a skill's JSON answer comes back. */
const echoGateway = {
  name: 'skill-gateway',
  fullName: 'loom.v1.SkillGateway',
  configSections: [],
  create: () =>
    Promise.resolve({
      addToServer(server) {
        server.addService('loom.v1.SkillGateway', SkillGatewayService, {
          ...unimplemented(SkillGatewayService, {}),
          invokeSkillBatch: (request) =>
            Promise.resolve({
              results: request.requests.map((each) => ({
                code: 0,
                message: '',
                body: each.body,
                contentType: 'application/json',
                httpStatus: 200,
                attempts: 1,
              })),
            }),
        });
      },
      close: () => Promise.resolve(),
    }),
};

/** The executor's identity, keeping the clients startServices gives it. */
let executorClients;
const executor = {
  name: 'executor',
  fullName: 'loom.v1.Executor',
  configSections: [],
  create: ({ clients }) => {
    executorClients = clients;
    return Promise.resolve({ addToServer: () => undefined, close: () => Promise.resolve() });
  },
};

const config = loadConfig({
  env: {},
  overrides: ['server.port=0', 'loom.telemetry.prometheus.port=0', `loom.auth.tokens.executor=${TOKEN}`],
});
const running = await startServices({ config, modules: [echoGateway, executor], logger: capturedLogger().logger });
const inMemory = executorClients.get('skill-gateway');
const overGrpc = createClient(SkillGatewayClient, `127.0.0.1:${running.port}`, { token: TOKEN, interceptors: [clientTracingInterceptor()] });

const body = Buffer.from(`{"sentences":[${'"x",'.repeat(Math.max(0, Math.floor((BODY_BYTES - 20) / 4)))}"x"]}`);
const request = {
  skillName: 'annotation',
  requests: Array.from({ length: BATCH }, () => ({ body, contentType: 'application/json', traceHeaders: {}, path: '' })),
};

/** CPU microseconds of this process a request over BATCHES calls of BATCH requests. */
async function round(client) {
  const before = process.cpuUsage();
  for (let index = 0; index < BATCHES; index++) {
    const { results } = await call(client, 'invokeSkillBatch', request);
    if (results.length !== BATCH || results[0].body.byteLength !== body.byteLength) throw new Error('the stand-in gateway answered something else');
  }
  const used = process.cpuUsage(before);
  return (used.user + used.system) / (BATCHES * BATCH);
}

try {
  console.log(
    `InvokeSkillBatch of ${BATCH} requests of ${body.byteLength} bytes, answered with the same bytes; load average ${loadavg()[0].toFixed(2)}, ${ROUNDS} rounds of ${BATCHES} calls each way`,
  );
  await round(inMemory); // warm-up: JIT, connections
  await round(overGrpc);
  const local = [];
  const grpc = [];
  for (let index = 0; index < ROUNDS; index++) {
    local.push(await round(inMemory));
    grpc.push(await round(overGrpc));
  }
  const [localMedian, grpcMedian] = [median(local), median(grpc)];
  console.log(`in memory (LocalChannel): ${localMedian.toFixed(1)} µs of CPU a request (rounds: ${local.map((value) => value.toFixed(0)).join(' ')})`);
  console.log(`over gRPC (the process's port): ${grpcMedian.toFixed(1)} µs of CPU a request (rounds: ${grpc.map((value) => value.toFixed(0)).join(' ')})`);
  console.log(
    `in memory / gRPC: ${(localMedian / grpcMedian).toFixed(2)}x the CPU; ${((grpcMedian - localMedian) / 1000).toFixed(3)} ms less a request (in memory calls served: ${running.server.local.callsServed}); load average after ${loadavg()[0].toFixed(2)}`,
  );
} finally {
  overGrpc.close();
  await running.stop();
}
