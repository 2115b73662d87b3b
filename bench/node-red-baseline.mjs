// The Node-RED half of the executor benchmark: the same flow as loom's (entry → JavaScript transformer → JavaScript
// filter → sink), run by Node-RED 4 embedded in this process, so that executor.bench.mjs can print loom's rate as a
// ratio of Node-RED's measured on the same machine in the same run.
//
// How Node-RED runs here
//  - RED.init(null, settings) + RED.start(): no HTTP server, editor and admin API off (httpAdminRoot: false), no HTTP
//    nodes (httpNodeRoot: false), telemetry off, userDir a fresh temporary directory removed by stopNodeRed(), logging
//    only to an in-process handler (nothing printed; errors are kept so that a broken flow fails the measurement
//    instead of hanging it). Message delivery is left at Node-RED's default (asynchronous, one
//    setImmediate per hop; runtimeSyncDelivery is not set), as a real deployment runs.
//  - The flow is deployed with the runtime API, RED.runtime.flows.setFlows({ flows: { flows }, deploymentType: 'full' }),
//    one deploy per measureNodeRed() call.
//  - Transformer and filter are real core `function` nodes (Node-RED's vm sandbox, default per-message timeout of 0,
//    i.e. none, as the editor creates them): the comparison point for loom's isolated-vm.
//  - Entry: a tiny node type registered in process (RED.nodes.registerType), with no input, that plays the part of an
//    input node such as `mqtt in`: the benchmark calls its node.send(msg) (Node.prototype.send: assigns _msgid, routes
//    through Flow.send and the hooks to a setImmediate delivery to the next node), which is exactly what an input node
//    does when a message arrives. Cheaper than an inject node (whose input handler evaluates its own properties and
//    would replace msg.payload) and faithful to how messages enter a Node-RED flow.
//  - Sink: another registered node type whose input handler increments a counter in this module and calls done() like
//    any well-behaved node. Reliable (it sees exactly what arrives) and cheap (no vm, no context store); no
//    RED.hooks are added, because registering any hook puts work on every hop of every node and would slow Node-RED.
//
// Feeding (Node-RED has no back-pressure): messages are injected in chunks of CHUNK (1,000) per turn of the event loop,
// the next chunk in a setImmediate. Each hop in Node-RED is a setImmediate too, and an immediate queued during a
// turn runs in the next one, so a message injected in turn t reaches the transformer in t+1, the filter in t+2 and the
// sink in t+3: at most ~4 chunks are in flight and memory stays bounded, while each turn still carries enough work
// that the loop's own overhead is negligible (chunks of 250 to 5,000 gave rates within this machine's run-to-run
// noise; measured peak in flight with chunks of 1,000: 2,999 messages). A heap guard also holds injection back while
// the heap is above HEAP_LIMIT, should that ever stop being true.
//
// Timing: a warm-up of WARMUP (5,000) messages first, not counted; then the timer starts just before the first message
// is injected and stops in the sink when the expected count has arrived (or, without expectedAtSink, at the last
// arrival once the flow is quiet).
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import dns from 'node:dns';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const CHUNK = Number(process.env.NODE_RED_CHUNK ?? 1000);
const WARMUP = Number(process.env.NODE_RED_WARMUP ?? 5000);
const HEAP_LIMIT = 512 * 1024 * 1024;
/** How long the sink count may stay unchanged after the last injection before the run is declared stuck. */
const STALL_MS = 5000;

const TAB = 'loom-bench-tab';
const INLET = 'loom-bench-inlet';
const TRANSFORM = 'loom-bench-transform';
const FILTER = 'loom-bench-filter';
const SINK = 'loom-bench-sink';

/** The sample body of the standalone run: even messages have 5 words (pass the filter), odd ones 2 (filtered out). */
export function samplePayload(index) {
  return { id: index, title: `article ${index}`, text: index % 2 === 0 ? 'the quick brown fox jumps' : 'too short' };
}

let RED = null;
/** node-red's version from its package.json (RED.version() appends "-git" when a .git directory is above it). */
let version = '';
let starting = null;
let userDir = null;
/** Errors Node-RED logged (a function node that throws logs one per message), at most 20. */
let problems = [];
/** The sink's view: how many messages arrived, when the target count arrived, when the last one did. */
const sink = { count: 0, target: Infinity, reachedAt: 0, lastAt: 0, onTarget: null };

function ensureStarted() {
  starting ??= start();
  return starting;
}

async function start() {
  const require = createRequire(import.meta.url);
  // node-red's red.js calls dns.setDefaultResultOrder('ipv4first') when loaded; undo that so the benchmark's other
  // half (loom, in the same process) resolves names as it would without Node-RED.
  const dnsOrder = dns.getDefaultResultOrder?.();
  RED = require('node-red');
  version = require('node-red/package.json').version;
  if (dnsOrder) dns.setDefaultResultOrder(dnsOrder);

  userDir = mkdtempSync(join(tmpdir(), 'loom-bench-node-red-'));
  RED.init(null, {
    userDir,
    flowFile: 'flows.json',
    credentialSecret: false,
    httpAdminRoot: false,
    httpNodeRoot: false,
    disableEditor: true,
    uiPort: 0,
    telemetry: { enabled: false, updateNotification: false },
    externalModules: { autoInstall: false, palette: { allowInstall: false }, modules: { allowInstall: false } },
    functionExternalModules: false,
    editorTheme: { projects: { enabled: false } },
    logging: {
      bench: {
        level: 'error',
        metrics: false,
        audit: false,
        handler: () => (entry) => {
          if (problems.length < 20) problems.push(`[${entry.type ?? 'runtime'}${entry.id ? `:${entry.id}` : ''}] ${entry.msg?.message ?? entry.msg}`);
        },
      },
    },
  });

  // RED.start() resolves before the (empty) stored flows have started; wait for that so our deploy does not race it.
  const flowsStarted = new Promise((resolve) => RED.events.once('flows:started', resolve));
  await RED.start();
  await Promise.race([flowsStarted, new Promise((resolve) => setTimeout(resolve, 2000).unref())]);

  function InletNode(config) {
    RED.nodes.createNode(this, config);
  }
  function SinkNode(config) {
    RED.nodes.createNode(this, config);
    this.on('input', (_msg, _send, done) => {
      const count = ++sink.count;
      if (count === sink.target) {
        sink.reachedAt = performance.now();
        sink.onTarget?.();
      } else if (sink.target === Infinity) {
        sink.lastAt = performance.now();
      }
      done();
    });
  }
  RED.nodes.registerType('loom-bench', 'loom-bench-inlet', InletNode);
  RED.nodes.registerType('loom-bench', 'loom-bench-sink', SinkNode);
}

function functionNode(id, name, func, next) {
  return {
    id,
    type: 'function',
    z: TAB,
    name,
    func,
    outputs: 1,
    timeout: 0,
    noerr: 0,
    initialize: '',
    finalize: '',
    libs: [],
    x: 0,
    y: 0,
    wires: [[next]],
  };
}

async function deploy(transformCode, filterCode) {
  problems = [];
  const flows = [
    { id: TAB, type: 'tab', label: 'loom benchmark', disabled: false, info: '' },
    { id: INLET, type: 'loom-bench-inlet', z: TAB, name: 'entry', x: 0, y: 0, wires: [[TRANSFORM]] },
    functionNode(TRANSFORM, 'transform', transformCode, FILTER),
    functionNode(FILTER, 'filter', filterCode, SINK),
    { id: SINK, type: 'loom-bench-sink', z: TAB, name: 'sink', x: 0, y: 0, wires: [] },
  ];
  // setFlows resolves once the flows are saved and the old ones stopped; the new ones start after, so wait for that.
  const flowsStarted = new Promise((resolve) => RED.events.once('flows:started', resolve));
  await RED.runtime.flows.setFlows({ flows: { flows }, deploymentType: 'full' });
  await flowsStarted;
  const inlet = RED.nodes.getNode(INLET);
  if (!inlet || !RED.nodes.getNode(SINK)) throw new Error(`Node-RED did not start the benchmark flow: ${problems.join('; ')}`);
  return inlet;
}

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

function failIfProblems(phase) {
  if (problems.length > 0) throw new Error(`Node-RED reported errors during ${phase}: ${[...new Set(problems)].join('; ')}`);
}

/**
 * Injects `total` messages in chunks of CHUNK, one chunk per event-loop turn; resolves after the last chunk.
 * Stops early if Node-RED logged an error (e.g. the function code throws), so a broken flow fails fast.
 */
async function feed(inlet, total, makePayload, firstIndex) {
  let index = 0;
  let chunks = 0;
  while (index < total) {
    const end = Math.min(index + CHUNK, total);
    for (; index < end; index++) inlet.send({ payload: makePayload(firstIndex + index) });
    await nextTurn();
    if (problems.length > 0) return;
    if (++chunks % 16 === 0) {
      while (process.memoryUsage().heapUsed > HEAP_LIMIT) await nextTurn();
    }
  }
}

/** Waits until the sink reaches `target` (resolves true) or its count stays unchanged for STALL_MS (resolves false). */
function arrival(target) {
  return new Promise((resolve) => {
    if (sink.count >= target) return resolve(true);
    let last = sink.count;
    let since = performance.now();
    const timer = setInterval(() => {
      if (problems.length > 0) {
        clearInterval(timer);
        resolve(false);
      } else if (sink.count !== last) {
        last = sink.count;
        since = performance.now();
      } else if (performance.now() - since > STALL_MS) {
        clearInterval(timer);
        resolve(false);
      }
    }, 50);
    sink.onTarget = () => {
      clearInterval(timer);
      sink.onTarget = null;
      resolve(true);
    };
  });
}

/** Waits until the sink count has been unchanged for `turns` event-loop turns (the pipeline is 3 turns deep). */
async function quiet(turns = 20) {
  let last = -1;
  let still = 0;
  while (still < turns) {
    await nextTurn();
    if (sink.count === last) still++;
    else {
      last = sink.count;
      still = 0;
    }
  }
}

/**
 * Runs `messages` messages through Node-RED: an entry node → function node (transform code) → function node (filter
 * code) → a counting sink, in this process (see the header for how it is embedded, fed and counted). The first call
 * starts Node-RED (a few seconds, not measured); later calls redeploy the flow. Node-RED cannot be restarted in a
 * process after stopNodeRed().
 *
 * @param {object} options
 * @param {string} options.transformCode function-node code in Node-RED's idiom on msg.payload, e.g.
 *   `msg.payload = { ...msg.payload, title: String(msg.payload.title).toUpperCase() }; return msg;` (alias: transformBody)
 * @param {string} options.filterCode function-node code returning msg to keep it or null to drop it, e.g.
 *   `return msg.payload.words > 3 ? msg : null;` (alias: filterBody)
 * @param {number} options.messages how many messages to inject, after the warm-up (alias: count)
 * @param {number} [options.expectedAtSink] how many of them pass the filter; when given, the timer stops when that many
 *   have arrived and a run that delivers fewer throws; without it, the timer stops at the last arrival once the flow
 *   is quiet
 * @param {(index: number) => object} [options.makePayload] msg.payload of message `index` (default samplePayload);
 *   building it is inside the timed loop, as building the body is on loom's side
 * @param {number} [options.warmup] messages run first and not counted (default 5,000)
 * @returns {Promise<{ messages: number, seconds: number, perSecond: number, injected: number, arrivedPerSecond: number, cpuMicrosPerMessage: number, version: string }>}
 *   messages: how many arrived at the sink; seconds: first injection to the expected (or last) arrival; perSecond:
 *   messages INJECTED per second, i.e. the rate at which the flow takes in and fully processes messages, the filtered
 *   ones included (compare it with loom's input rate); arrivedPerSecond: messages / seconds; cpuMicrosPerMessage: this
 *   process's CPU time (user and system) from the first injection until the flow is quiet, per message injected;
 *   version: node-red's.
 */
export async function measureNodeRed(options) {
  const transformCode = options.transformCode ?? options.transformBody;
  const filterCode = options.filterCode ?? options.filterBody;
  const total = options.messages ?? options.count;
  const { expectedAtSink, makePayload = samplePayload, warmup = WARMUP } = options;
  if (typeof transformCode !== 'string' || typeof filterCode !== 'string') throw new TypeError('transformCode and filterCode must be strings');
  if (!Number.isInteger(total) || total <= 0) throw new TypeError('messages must be a positive integer');
  if (expectedAtSink !== undefined && (!Number.isInteger(expectedAtSink) || expectedAtSink < 0 || expectedAtSink > total)) {
    throw new TypeError('expectedAtSink must be an integer between 0 and messages');
  }

  await ensureStarted();
  const inlet = await deploy(transformCode, filterCode);

  // warm-up: same path, not counted (JIT, the function nodes' first runs, the sandbox contexts)
  Object.assign(sink, { count: 0, target: Infinity, reachedAt: 0, lastAt: 0, onTarget: null });
  await feed(inlet, warmup, makePayload, 0);
  await quiet();
  failIfProblems('the warm-up');

  Object.assign(sink, {
    count: 0,
    target: expectedAtSink === undefined || expectedAtSink === 0 ? Infinity : expectedAtSink,
    reachedAt: 0,
    lastAt: 0,
    onTarget: null,
  });
  const arrived = sink.target === Infinity ? null : arrival(sink.target);
  const cpuStarted = process.cpuUsage();
  const started = performance.now();
  await feed(inlet, total, makePayload, warmup);
  let ended;
  if (arrived) {
    const reached = await arrived;
    failIfProblems('the run');
    if (!reached) throw new Error(`only ${sink.count} of the expected ${expectedAtSink} messages arrived at the Node-RED sink`);
    ended = sink.reachedAt;
    await quiet(); // let anything unexpected drain before the count is read
  } else {
    await quiet();
    failIfProblems('the run');
    ended = sink.count > 0 ? sink.lastAt : performance.now();
  }
  if (expectedAtSink !== undefined && sink.count !== expectedAtSink) {
    throw new Error(`${sink.count} messages arrived at the Node-RED sink, ${expectedAtSink} expected`);
  }
  const seconds = (ended - started) / 1000;
  const cpu = process.cpuUsage(cpuStarted);
  const cpuMicrosPerMessage = (cpu.user + cpu.system) / total;
  return { messages: sink.count, seconds, perSecond: total / seconds, injected: total, arrivedPerSecond: sink.count / seconds, cpuMicrosPerMessage, version };
}

/** Stops the Node-RED runtime (its flows, storage, context) and removes its temporary userDir. Safe to call twice. */
export async function stopNodeRed() {
  if (!starting) return;
  try {
    await starting;
  } catch {
    // it failed to start: still remove what was created
  }
  try {
    if (RED) await RED.stop();
  } finally {
    if (userDir) rmSync(userDir, { recursive: true, force: true });
    userDir = null;
    starting = Promise.reject(new Error('Node-RED cannot be restarted in this process'));
    starting.catch(() => {});
  }
}

// Standalone check: `node bench/node-red-baseline.mjs [messages] [runs]` — 200,000 messages by default, half of them
// filtered out, with the transform and filter of executor.bench.mjs.
if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const messages = Number(process.argv[2] ?? 200_000);
  const runs = Number(process.argv[3] ?? 1);
  const transformCode =
    "msg.payload = { ...msg.payload, title: String(msg.payload.title).toUpperCase(), words: String(msg.payload.text).split(' ').length }; return msg;";
  const filterCode = 'return msg.payload.words > 3 ? msg : null;';
  let status = 0;
  try {
    for (let run = 1; run <= runs; run++) {
      // samplePayload passes the filter for even indexes; the measured run starts after the warm-up's indexes
      const expectedAtSink = Array.from({ length: messages }, (_, i) => (WARMUP + i) % 2 === 0).filter(Boolean).length;
      const result = await measureNodeRed({ transformCode, filterCode, messages, expectedAtSink });
      console.log(
        `Node-RED ${version}: ${messages.toLocaleString('en')} messages in, ${result.messages.toLocaleString('en')} at the sink, ` +
          `${result.seconds.toFixed(2)} s: ${Math.round(result.perSecond).toLocaleString('en')} msg/s in ` +
          `(${Math.round(result.arrivedPerSecond).toLocaleString('en')} msg/s at the sink)`,
      );
    }
  } catch (error) {
    console.error(error);
    status = 1;
  }
  await stopNodeRed();
  // With this configuration RED.stop() leaves no handle open (checked: none after stopNodeRed()), but a core-node
  // module or a later Node-RED version could; exit explicitly so the check never hangs.
  process.exit(status);
}
