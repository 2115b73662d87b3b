// Text to graph at the speed of its NLP (issue 38): examples/text-to-graph.workflow.yaml (annotation → keywords →
// two graph writers on the embedded graph) behind a real `loom serve`, fed with `loom message publish --file` as a
// user would, 300 documents of 8 EWT-dev sentences each. Each figure is documents/s from the publish command's start
// until the last writer has every document; its baseline, in the same run on the same documents, is the annotation
// skill alone (HTTP, the workflow's `technology` pipeline, four requests at a time), the NLP the job cannot beat.
//  - one process: `npm start`'s layout (`loom serve --config config/loom.dev.yaml --with-skills`);
//  - skills apart: `loom skills serve` in its own process, `loom serve` registering it.
// Also the annotation skill's documents/s at 1 and 4 concurrent requests (its worker threads use every core), and
// the CPU seconds each process spent from the publish to the last document (the workflow's start, which opens the
// embedded graph, is before it and not counted). With the skills apart, also the job's floor: the CPU a document of the
// keyword skill alone (the same annotations, 4 requests at a time) and of the two graph writers alone (a workflow of just
// them on a fresh embedded graph, fed the rows they get in the job), and the ratio the job could reach if loom's own
// transport (gRPC, HTTP, messages) cost nothing and the two cores were never idle: annotation / (annotation + keywords
// + writers). BENCH_DOCUMENTS changes the count; BENCH_CPU_PROF=<directory> writes a --cpu-prof of each loom process
// there (the figures are then slower); BENCH_ONLY=concurrency|one|apart|grpc runs one part.
// With the skills apart it also prints loom's own CPU a document split into the embedded graph's engine (PGlite's worker
// thread, read from /proc per thread) and the rest (issue 51, Must 5: the rest <= 2 ms), and runs the same layout once
// more with the executor calling the skill gateway of its own process over gRPC (`loom.services.skill-gateway.address`
// set to its own port), the path before issue 51, as the baseline of the in-memory call (`apart` runs both, `grpc` that one).
// In one process it prints the loom process's CPU a document by thread: the main thread (executor, gateway, gRPC, the
// skills' HTTP servers and their JSON), the embedded graph's engine, and the other threads (the skills' worker threads
// doing the NLP, V8's helpers); and runs that layout once more with `loom.skills.inProcess=false`, the gateway calling its
// own process's skills over loopback HTTP as before issue 51 Must 5's in-memory skill call (`one` runs both, `onehttp` that one).
// With the skills apart the rest is also split into loom's main thread and its other threads (V8's helpers: concurrent
// marking, sweeping and compiling; loom's own database's worker), and BENCH_ONLY=rest runs only that job (no annotation
// baseline, no floor, no gRPC baseline) BENCH_RUNS times (default 1), for A/B runs of two builds. Every loom runs with
// loom.scripts.python.warmInterpreters=0: the job runs no Python, and the two interpreter snapshots a loom makes in the
// background from its start (about 20 MB each, read from their maker's pipe on the main thread) would otherwise land
// in the first seconds of the measured window as a one-off cost, not a document's.
import { execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parse, stringify } from 'yaml';
import { ExecutorClient } from '@loom/contracts';
import { mergedEntitiesOf } from '@loom/domain';
import { testDataDir } from '@loom/nlp-training';
import { call, createClient } from '@loom/service-kit';
import { cpuSecondsOf, loomMain, median, startLoomServe } from './loom-serve.mjs';
import { graphSeconds, mainThreadSeconds, threadCpu } from './thread-cpu.mjs';

const DOCUMENTS = Number(process.env.BENCH_DOCUMENTS ?? 300);
const SENTENCES_PER_DOCUMENT = 8;
const ROUNDS = 3;
const CPU_PROF = process.env.BENCH_CPU_PROF;
/** One part only: `concurrency`, `one` (one process) or `apart` (skills apart); all when unset. */
const ONLY = process.env.BENCH_ONLY;
/** How many times BENCH_ONLY=rest runs the job. */
const RUNS = Number(process.env.BENCH_RUNS ?? 1);
/** A fixed interval between the status polls, ms (BENCH_POLL_MS); by the progress when unset (lastWriterDone). */
const POLL_MS = process.env.BENCH_POLL_MS === undefined ? undefined : Number(process.env.BENCH_POLL_MS);
/** What no measured loom does in the background: make Python interpreters for scripts the job does not have. */
const QUIET = process.env.BENCH_WARM_INTERPRETERS === '1' ? [] : ['--set', 'loom.scripts.python.warmInterpreters=0'];
const WORKFLOW = 'Text to graph';
const WRITERS_WORKFLOW = 'Graph writers alone';
const LAST_WRITER = 'Write entities';
const FAILURES = 'Failures';
const root = fileURLToPath(new URL('..', import.meta.url));
const workflowFile = join(root, 'examples', 'text-to-graph.workflow.yaml');
const devConfig = join(root, 'config', 'loom.dev.yaml');
const run = promisify(execFile);
const fmt = (value) => (value >= 100 ? value.toFixed(0) : value.toFixed(1));

/** EWT dev's sentences in order, eight to a document (its 2,001 sentences start again after the last). */
function documents() {
  const conllu = readFileSync(join(testDataDir(), 'ud-english-ewt', 'en_ewt-ud-dev.conllu'), 'utf8');
  const sentences = [...conllu.matchAll(/^# text = (.*)$/gm)].map((match) => match[1].trim());
  const sentence = (index) => sentences[index % sentences.length];
  return Array.from({ length: DOCUMENTS }, (_, index) => ({
    id: `ewt-dev-${index + 1}`,
    title: `EWT dev document ${index + 1}`,
    text: Array.from({ length: SENTENCES_PER_DOCUMENT }, (_, offset) => sentence(index * SENTENCES_PER_DOCUMENT + offset)).join(' '),
  }));
}

/** `loom <args>` against a running loom; resolves with its standard output. */
async function loom(address, ...args) {
  const { stdout } = await run(process.execPath, ['--no-node-snapshot', loomMain, '--address', address, ...args], { maxBuffer: 16 * 1024 * 1024 });
  return stdout;
}

/** `loom skills serve` in its own process on free ports; resolves with the skills' URLs by name once all listen. */
async function startSkillsProcess(names, env) {
  const directory = mkdtempSync(join(tmpdir(), 'loom-bench-skills-'));
  const ports = names.flatMap((name) => ['--port', `${name}=0`]);
  const nodeArgs = CPU_PROF === undefined ? [] : ['--cpu-prof', '--cpu-prof-dir', CPU_PROF];
  const child = spawn(process.execPath, ['--no-node-snapshot', ...nodeArgs, loomMain, 'skills', 'serve', '--only', names.join(','), ...ports], {
    cwd: directory,
    env: { PATH: process.env.PATH, SKILL_DATA_DIRECTORY: directory, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  const urls = new Map();
  await new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      let entry;
      try {
        entry = JSON.parse(line);
      } catch {
        return; // not a log line
      }
      if (entry.msg === 'skill service listening') urls.set(entry.skill, entry.url);
      if (urls.size === names.length) resolve();
    });
    void exited.then((code) => reject(new Error(`loom skills serve exited with ${code} before listening`)));
  });
  return {
    child,
    urls,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

/** The machine's CPU time so far, busy and in all, in clock ticks (/proc/stat's first line); undefined off Linux. */
function machineTicks() {
  try {
    const ticks = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1, 9).map(Number);
    const idle = ticks[3] + ticks[4]; // idle and iowait
    const all = ticks.reduce((sum, value) => sum + value, 0);
    return { busy: all - idle, all };
  } catch {
    return undefined;
  }
}

/**
 * Waits until every document is written by the last writer or has reached the failure handler; answers the status then.
 * A status costs loom about 0.7 ms of CPU (measured at load 7), so the polls come at half the time the rest should take
 * at the rate so far (20-500 ms; every 50 ms with BENCH_POLL_MS=50): about 20 a run, not one every 50 ms.
 */
async function lastWriterDone(address, workflow, expected) {
  const executor = createClient(ExecutorClient, address, { retry: false });
  const started = performance.now();
  try {
    for (;;) {
      const status = await call(executor, 'getWorkflowStatus', { name: workflow });
      // a component's name in the status carries its instance id: `Write entities_<uuid>`
      const named = (name) => status.components.find((component) => component.name === name || component.name.startsWith(`${name}_`));
      const done = Number(named(LAST_WRITER)?.messagesOut ?? 0) + Number(named(FAILURES)?.messagesIn ?? 0);
      if (done >= expected) return status;
      const elapsed = performance.now() - started;
      const rest = done === 0 ? 100 : ((expected - done) * elapsed) / done / 2;
      const wait = POLL_MS ?? Math.min(500, Math.max(20, rest));
      await new Promise((resolve) => setTimeout(resolve, wait)); // polling an outcome, not timing one
    }
  } finally {
    executor.close();
  }
}

/**
 * Pushes and starts the workflow, publishes the file, and answers the seconds until the last writer has every document
 * and the CPU seconds of each of `pids` in that time (the workflow's start, which opens the embedded graph, comes before).
 */
async function textToGraph(address, file, expected, pids, workflow = { file: workflowFile, name: WORKFLOW }, threadsAtListening = undefined) {
  await loom(address, 'workflow', 'push', workflow.file);
  await loom(address, 'workflow', 'start', workflow.name);
  const cpuBefore = pids.map((pid) => cpuSecondsOf(pid));
  const threadsBefore = threadCpu(pids[0]);
  const ticksBefore = machineTicks();
  const started = performance.now();
  await loom(address, 'message', 'publish', workflow.name, '--inlet', 'Documents', '--file', file);
  const status = await lastWriterDone(address, workflow.name, expected);
  const seconds = (performance.now() - started) / 1000;
  const cpu = pids.map((pid, index) => cpuSecondsOf(pid) - cpuBefore[index]);
  const threadsAfter = threadCpu(pids[0]);
  const graph = threadsAtListening === undefined ? undefined : graphSeconds(threadsBefore, threadsAfter, threadsAtListening);
  const main = mainThreadSeconds(pids[0], threadsBefore, threadsAfter);
  const ticksAfter = machineTicks();
  // the share of the machine's cores busy in the window (with this bench and the publish command, and anything else running)
  const busy = ticksBefore === undefined || ticksAfter === undefined ? undefined : (ticksAfter.busy - ticksBefore.busy) / (ticksAfter.all - ticksBefore.all);
  const failed = status.components.reduce((sum, component) => sum + Number(component.messagesFailed), 0);
  if (failed > 0) throw new Error(`${failed} messages failed: ${status.components.map((component) => component.lastError).find((error) => error !== '')}`);
  await loom(address, 'workflow', 'stop', workflow.name).catch(() => undefined);
  return { seconds, cpu, busy, graph, main };
}

/** A document's request to the annotation skill, with the workflow's pipeline. */
const annotationBody = (doc) => JSON.stringify({ text: doc.text, pipeline: 'technology' });

/** POSTs each JSON body to `url`, `concurrency` at a time; answers what `read` makes of each answer (parsed JSON by default), in order. */
async function postAll(url, bodies, concurrency, read = (response) => response.json()) {
  const answers = new Array(bodies.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < bodies.length) {
        const index = next++;
        const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: bodies[index] });
        if (response.status !== 200) throw new Error(`${url} answered ${response.status}: ${await response.text()}`);
        answers[index] = await read(response);
      }
    }),
  );
  return answers;
}

/** Posts every document's text to the annotation skill, `concurrency` at a time; answers the seconds taken. */
async function annotateAll(url, docs, concurrency) {
  const bodies = docs.map(annotationBody);
  const started = performance.now();
  // the answers are read, not parsed: the baseline is the skill's work
  await postAll(`${url}/v2/annotate`, bodies, concurrency, (response) => response.arrayBuffer());
  return (performance.now() - started) / 1000;
}

/**
 * The job's floor with the skills apart (see the head of this file): CPU milliseconds a document of the keyword skill
 * alone and of the graph writers alone, and the ratio to the NLP the job could reach with nothing else.
 */
async function floorOf(layout, docs, annotationCpuMs) {
  const [loomPid, skillsPid] = layout.pids;
  const annotations = await postAll(`${layout.annotationUrl}/v2/annotate`, docs.map(annotationBody), 4);
  // as the keyword component sends them: the annotation in the body (the registered skill has no parameters)
  const keywordBodies = annotations.map((annotation) => JSON.stringify({ annotatedText: annotation }));
  await postAll(layout.keywordsUrl, keywordBodies.slice(0, 16), 4);
  const keywordsCpu = cpuSecondsOf(skillsPid);
  const keywords = await postAll(layout.keywordsUrl, keywordBodies, 4);
  const keywordsCpuMs = ((cpuSecondsOf(skillsPid) - keywordsCpu) * 1000) / docs.length;

  // the example's two writers and their failure handler, on a graph of their own, fed the rows the job gives them
  const example = parse(readFileSync(workflowFile, 'utf8'));
  const writers = {
    name: WRITERS_WORKFLOW,
    resources: {
      'Knowledge graph': {
        ...example.resources['Knowledge graph'],
        parameters: { ...example.resources['Knowledge graph'].parameters, graph: 'writers_alone' },
      },
    },
    components: Object.fromEntries(['Documents', 'Write keywords', 'Write entities', 'Failures'].map((name) => [name, example.components[name]])),
    links: ['Documents -> Write keywords -> Write entities'],
  };
  const directory = mkdtempSync(join(tmpdir(), 'loom-bench-writers-'));
  try {
    const writersFile = join(directory, 'writers.workflow.yaml');
    writeFileSync(writersFile, stringify(writers));
    const rowsFile = join(directory, 'rows.jsonl');
    const rows = docs.map((doc, index) => ({
      id: doc.id,
      title: doc.title,
      _keywords: keywords[index],
      _merged_entities: mergedEntitiesOf(annotations[index]),
    }));
    writeFileSync(rowsFile, `${rows.map((row) => JSON.stringify(row)).join('\n')}\n`);
    const { cpu, graph } = await textToGraph(
      layout.address,
      rowsFile,
      docs.length,
      [loomPid],
      { file: writersFile, name: WRITERS_WORKFLOW },
      layout.threadsAtListening,
    );
    const writersCpuMs = (cpu[0] * 1000) / docs.length;
    const writersGraphMs = ((graph ?? 0) * 1000) / docs.length;
    const ceiling = annotationCpuMs / (annotationCpuMs + keywordsCpuMs + writersCpuMs);
    console.log(
      `  floor: keyword skill alone ${fmt(keywordsCpuMs)} ms CPU a document (4 at a time), the two graph writers alone ${fmt(writersCpuMs)} ms ` +
        `(loom, embedded graph: its engine ${fmt(writersGraphMs)} ms, the rest ${fmt(writersCpuMs - writersGraphMs)} ms); with nothing else the job could reach ${ceiling.toFixed(2)}x of the annotation alone (${fmt(annotationCpuMs)} ms)`,
    );
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

/** Median documents/s of the annotation skill over ROUNDS rounds after a warm-up round. */
async function annotationRate(url, docs, concurrency) {
  await annotateAll(url, docs.slice(0, 16), concurrency);
  const rates = [];
  for (let round = 0; round < ROUNDS; round++) rates.push(docs.length / (await annotateAll(url, docs, concurrency)));
  return median(rates);
}

/**
 * One layout: its documents/s end to end, the annotation baseline in the same loom, and CPU seconds per process.
 * `restOnly`: the job alone after a warm-up of 16 documents through the annotation skill (no baseline, no floor).
 */
async function measureLayout(label, start, docs, file, { restOnly = false } = {}) {
  const layout = await start();
  const cpuNow = () => layout.pids.reduce((sum, pid) => sum + cpuSecondsOf(pid), 0);
  try {
    const baselineCpu = cpuNow();
    const baseline = restOnly
      ? (await annotateAll(layout.annotationUrl, docs.slice(0, 16), 4), Number.NaN)
      : await annotationRate(layout.annotationUrl, docs, 4);
    // the warm-up round and ROUNDS rounds: CPU milliseconds a document of the annotation alone
    const baselineCpuMs = ((cpuNow() - baselineCpu) * 1000) / (restOnly ? 16 : 16 + ROUNDS * docs.length);
    // in one process the annotation's worker threads start with its first call: the graph's thread is one started later
    if (layout.pids.length === 1) layout.threadsAtListening = new Set(threadCpu(layout.pids[0]).keys());
    const { seconds, cpu, busy, graph, main } = await textToGraph(layout.address, file, docs.length, layout.pids, undefined, layout.threadsAtListening);
    const cpuMs = (cpu.reduce((sum, value) => sum + value, 0) * 1000) / docs.length;
    const rate = docs.length / seconds;
    console.log(
      `${label}: ${fmt(rate)} documents/s end to end (${seconds.toFixed(2)} s for ${docs.length}); annotation skill alone ${fmt(baseline)} documents/s ` +
        `(4 at a time): ${(rate / baseline).toFixed(2)}x; CPU a document ${fmt(cpuMs)} ms end to end ` +
        `(${cpu.map((value, index) => `${layout.names[index]} ${value.toFixed(1)} s`).join(', ')}) against ${fmt(baselineCpuMs)} ms for the annotation alone` +
        (busy === undefined ? '' : `; the cores ${Math.round(busy * 100)}% busy meanwhile`),
    );
    if (graph !== undefined && layout.pids.length === 1) {
      // one process: its CPU by thread (the skills' NLP in their worker threads, the graph's engine in its own)
      const perDocument = (value) => (value * 1000) / docs.length;
      const others = cpu[0] - main - graph;
      console.log(
        `  the process's CPU a document by thread: main thread ${fmt(perDocument(main))} ms (executor, skill gateway, gRPC, the skills' HTTP ` +
          `servers and their JSON), the embedded graph's engine ${fmt(perDocument(graph))} ms, the other threads (the skills' NLP workers, ` +
          `V8's helpers) ${fmt(perDocument(others))} ms`,
      );
    } else if (graph !== undefined) {
      // loom's own CPU, skills apart: its process's, split into the embedded graph's engine and the rest
      printLoomCpu('  ', cpu[0], graph, main, docs.length, baselineCpuMs);
      // the same texts again under other ids through the same loom, its code now compiled: the steady state
      const again = await textToGraph(layout.address, fileAgain, docs.length, layout.pids, undefined, layout.threadsAtListening);
      printLoomCpu(
        `  ${docs.length} more documents through the same loom (warm, ${fmt(docs.length / again.seconds)} documents/s): `,
        again.cpu[0],
        again.graph ?? 0,
        again.main,
        docs.length,
        baselineCpuMs,
      );
    }
    if (layout.keywordsUrl !== undefined && !layout.gatewayOverGrpc && !restOnly) await floorOf(layout, docs, baselineCpuMs);
    return { rate, baseline };
  } finally {
    await layout.stop();
  }
}

/** Loom's own CPU a document with the skills apart: the embedded graph's engine, and the rest split into the main thread and the others. */
function printLoomCpu(prefix, loomSeconds, graphSeconds, mainSeconds, count, baselineCpuMs) {
  const loomMs = (loomSeconds * 1000) / count;
  const graphMs = (graphSeconds * 1000) / count;
  const restMs = loomMs - graphMs;
  const mainMs = (mainSeconds * 1000) / count;
  console.log(
    `${prefix}loom's own CPU a document ${fmt(loomMs)} ms (${(loomMs / baselineCpuMs).toFixed(2)}x the annotation alone): the embedded graph's engine ` +
      `(PGlite with AGE, its worker thread: the writers' statements) ${fmt(graphMs)} ms, the rest (executor, skill gateway, ` +
      `gRPC and HTTP, JSON, graph driver) ${fmt(restMs)} ms (${(restMs / baselineCpuMs).toFixed(2)}x the annotation; issue 51's target: the rest <= 2 ms): ` +
      `its main thread ${fmt(mainMs)} ms, its other threads (V8's helpers: concurrent GC and compiling; loom's own database) ${fmt(restMs - mainMs)} ms`,
  );
}

/** `npm start`'s layout: one loom process with the skills in it; `inProcess: false` has its gateway call them over loopback HTTP. */
async function oneProcess({ inProcess = true } = {}) {
  let annotationUrl;
  const loomServe = await startLoomServe({
    // the development config's console on a free port, not its fixed 8180
    args: [
      '--config',
      devConfig,
      '--set',
      'loom.console.port=0',
      '--with-skills',
      'annotation,keywords',
      '--skill-port',
      'annotation=0',
      '--skill-port',
      'keywords=0',
      ...(inProcess ? [] : ['--set', 'loom.skills.inProcess=false']),
      ...QUIET,
    ],
    nodeArgs: CPU_PROF === undefined ? [] : ['--cpu-prof', '--cpu-prof-dir', CPU_PROF],
    onLine: (entry) => {
      if (entry.msg === 'skill service listening' && entry.skill === 'annotation') annotationUrl = entry.url;
    },
  });
  return {
    address: loomServe.address,
    annotationUrl,
    // taken again after the annotation baseline (measureLayout), once the skills' worker threads run
    threadsAtListening: new Set(threadCpu(loomServe.child.pid).keys()),
    pids: [loomServe.child.pid],
    names: ['loom'],
    stop: () => loomServe.stop(),
  };
}

/** The skills in their own process (`loom skills serve`), registered with a `loom serve` that runs none. */
async function skillsApart({ gatewayOverGrpc = false } = {}) {
  const skills = await startSkillsProcess(['annotation', 'keywords'], {});
  const annotationUrl = skills.urls.get('annotation');
  const registrations = [
    ['annotation', { capability: 'ENTITY_EXTRACTION', url: `${annotationUrl}/v2/annotate`, pipeline: 'default', version: 'v2' }],
    ['keywords', { capability: 'KEYWORD_EXTRACTION', url: `${skills.urls.get('keywords')}/extractKeywords` }],
  ].flatMap(([name, registration]) => ['--set', `loom.skills.register.${name}=${JSON.stringify(registration)}`]);
  let loomServe;
  try {
    // the skill gateway given its own process's address is called over gRPC, as before issue 51 (a free port chosen here)
    const port = gatewayOverGrpc ? await freePort() : undefined;
    const overGrpc = port === undefined ? [] : ['--set', `server.port=${port}`, '--set', `loom.services.skill-gateway.address=127.0.0.1:${port}`];
    loomServe = await startLoomServe({
      args: ['--config', devConfig, '--set', 'loom.console.port=0', ...registrations, ...overGrpc, ...QUIET],
      nodeArgs: CPU_PROF === undefined ? [] : ['--cpu-prof', '--cpu-prof-dir', CPU_PROF],
    });
  } catch (error) {
    await skills.stop();
    throw error;
  }
  return {
    address: loomServe.address,
    annotationUrl,
    threadsAtListening: new Set(threadCpu(loomServe.child.pid).keys()),
    gatewayOverGrpc,
    // the floor is measured where each process's CPU is its own
    keywordsUrl: `${skills.urls.get('keywords')}/extractKeywords`,
    pids: [loomServe.child.pid, skills.child.pid],
    names: ['loom', 'skills'],
    async stop() {
      await loomServe.stop();
      await skills.stop();
    },
  };
}

/** A TCP port free on loopback a moment ago. */
async function freePort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** The annotation skill's documents/s at 1 and 4 requests at a time, in its own process. */
async function annotationConcurrency(docs) {
  const skills = await startSkillsProcess(['annotation'], {});
  try {
    const url = skills.urls.get('annotation');
    const one = await annotationRate(url, docs, 1);
    const four = await annotationRate(url, docs, 4);
    const tokens = docs.reduce((sum, doc) => sum + doc.text.split(/\s+/).length, 0) / docs.length;
    console.log(
      `annotation skill (${availableParallelism()} worker threads, technology pipeline): 1 at a time ${fmt(one)} documents/s, ` +
        `4 at a time ${fmt(four)} documents/s: ${(four / one).toFixed(2)}x (about ${Math.round(tokens)} words a document)`,
    );
  } finally {
    await skills.stop();
  }
}

if (CPU_PROF !== undefined) mkdirSync(CPU_PROF, { recursive: true });
const docs = documents();
const scratch = mkdtempSync(join(tmpdir(), 'loom-bench-t2g-'));
const file = join(scratch, 'documents.jsonl');
writeFileSync(file, `${docs.map((doc) => JSON.stringify(doc)).join('\n')}\n`);
// the same texts under other ids: new documents for the graph, for a second pass through a warm loom
const fileAgain = join(scratch, 'documents-again.jsonl');
writeFileSync(fileAgain, `${docs.map((doc) => JSON.stringify({ ...doc, id: `${doc.id}-again` })).join('\n')}\n`);
try {
  console.log(
    `${docs.length} documents of ${SENTENCES_PER_DOCUMENT} EWT-dev sentences; load average ${loadavg()[0].toFixed(2)}, ${availableParallelism()} cores`,
  );
  for (let run = 1; ONLY === 'rest' && run <= RUNS; run++) {
    await measureLayout(`run ${run} of ${RUNS}, load ${loadavg()[0].toFixed(2)}: skills apart, the job alone`, skillsApart, docs, file, { restOnly: true });
  }
  if (ONLY === undefined || ONLY === 'concurrency') await annotationConcurrency(docs);
  if (ONLY === undefined || ONLY === 'one') await measureLayout('one process (loom serve --with-skills)', oneProcess, docs, file);
  if (ONLY === undefined || ONLY === 'one' || ONLY === 'onehttp') {
    await measureLayout(
      'one process, its skills called over loopback HTTP (baseline: loom.skills.inProcess=false, as before)',
      () => oneProcess({ inProcess: false }),
      docs,
      file,
    );
  }
  if (ONLY === undefined || ONLY === 'apart') await measureLayout('skills apart (loom skills serve + loom serve)', skillsApart, docs, file);
  if (ONLY === undefined || ONLY === 'apart' || ONLY === 'grpc') {
    await measureLayout('skills apart, executor → gateway over gRPC (baseline: issue 51 before)', () => skillsApart({ gatewayOverGrpc: true }), docs, file);
  }
  console.log(`load average after: ${loadavg()[0].toFixed(2)}`);
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
