// Wall time of `loom workflow apply DIR` for a folder of 100 workflows when nothing changed (issue 53, the Measure:
// <= 2 s), as a CI job runs it: the built binary, a fresh process each run, against a `loom serve` holding the same
// 100 workflows. Against baselines in the same run: `loom workflow list` (the fixed cost of a `loom` process, its
// connection and one call) and the same ApplyWorkflows call made from this process (the store's own work: every file
// read, checked against the catalog and compared with the stored version as compact forms). A file whose text is the one
// its workflow was applied as is not read again; the same folder with a comment added to every file (same workflows,
// other texts, like a folder exported and never applied: each read and compared by the first plan, remembered by the
// store for later ones) is measured too. Also the first apply (100 added: each sealed and written
// durably). BENCH_RUNS runs of each (default 5), the median shown.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { WorkflowStoreClient } from '@loom/contracts';
import { call, createClient } from '@loom/service-kit';
import { median, startLoomServe } from './loom-serve.mjs';
import { scratchDir } from './scratch.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const loomBin = join(root, 'services', 'cli', 'bin', 'loom.js');
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const WORKFLOWS = Number(process.env.BENCH_WORKFLOWS ?? 100);
const load = () =>
  loadavg()
    .map((value) => value.toFixed(2))
    .join(' ');

/** A compact workflow of 12 components: inlet, 4 × (transformer, filter), graph writer on a Neo4j resource ($$ password), logger. */
function workflowText(index) {
  const stages = Array.from(
    { length: 4 },
    (_, stage) =>
      `  Clean ${stage}: { kind: processor.MessageTransformer, options: { language: javascript, script: "body.n${stage} = ${index}; return body;" } }\n` +
      `  Keep ${stage}: { kind: processor.MessageFilter, options: { language: javascript, script: "return body.n${stage} !== undefined;" } }\n`,
  ).join('');
  const chain = ['In', ...Array.from({ length: 4 }, (_, stage) => [`Clean ${stage}`, `Keep ${stage}`]).flat(), 'Write', 'Log'].join(' -> ');
  return `name: pipeline ${String(index).padStart(3, '0')}
autoStart: false
resources:
  Knowledge graph:
    kind: graph.Neo4jDatabase
    parameters: { host: neo4j.internal, port: 7687, user: loom, password: $$NEO4J_PASSWORD, database: neo4j, read_only: false }
components:
  In: source.Inlet
${stages}  Write: { kind: persistence.GraphDatabaseWriter, options: { query: "MERGE (a:Article {id: $body.id}) SET a.n = ${index}" }, resource: Knowledge graph }
  Log: sink.Logger
links:
  - ${chain}
`;
}

const scratch = scratchDir('loom-bench-workflow-apply-');
const folder = join(scratch, 'workflows');
mkdirSync(folder, { recursive: true });
for (let index = 0; index < WORKFLOWS; index++) writeFileSync(join(folder, `pipeline ${String(index).padStart(3, '0')}.workflow.yaml`), workflowText(index));

console.log(`load average at start: ${load()}`);
const loom = await startLoomServe({
  args: ['--services', 'secrets,config-store,audit', '--set', 'loom.auth.allowAnonymous=true', '--set', 'loom.secrets.generateKeys=true'],
});

/** Runs `loom --address … <args>` in a fresh process; its wall time in ms. */
function timed(args, expectStatus = 0) {
  const started = performance.now();
  const run = spawnSync(process.execPath, [loomBin, '--address', loom.address, ...args], { cwd: scratch, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  const ms = performance.now() - started;
  if (run.status !== expectStatus) throw new Error(`loom ${args.join(' ')} exited ${run.status}: ${run.stderr}${run.stdout.slice(0, 2000)}`);
  return { ms, stdout: run.stdout };
}

try {
  const created = spawnSync(process.execPath, [loomBin, '--address', loom.address, 'variable', 'create', 'NEO4J_PASSWORD', '--encrypted'], {
    input: 'bench-password\n',
    encoding: 'utf8',
  });
  if (created.status !== 0) throw new Error(created.stderr);

  const bytes = readdirSync(folder).reduce((sum, file) => sum + readFileSync(join(folder, file)).length, 0);
  console.log(`folder: ${WORKFLOWS} compact workflows of 12 components, ${bytes} bytes in all; loom serve started in ${loom.startMs.toFixed(0)} ms`);

  const first = timed(['workflow', 'apply', folder, '--yes']);
  const added = (first.stdout.match(/^added\b/gm) ?? []).length;
  console.log(`first apply (${added} added: each sealed, audited and written with fsync): ${first.ms.toFixed(0)} ms`);

  const list = Array.from({ length: RUNS }, () => timed(['workflow', 'list']).ms);
  const apply = Array.from({ length: RUNS }, () => {
    const run = timed(['workflow', 'apply', folder]);
    if (!run.stdout.includes('plan only') || /^(added|changed|removed)\b/m.test(run.stdout)) throw new Error(`the folder is not unchanged:\n${run.stdout}`);
    return run.ms;
  });
  const check = Array.from({ length: RUNS }, () => timed(['workflow', 'apply', folder, '--check']).ms);
  const commented = join(scratch, 'commented');
  mkdirSync(commented, { recursive: true });
  for (const file of readdirSync(folder)) writeFileSync(join(commented, file), `# reviewed\n${readFileSync(join(folder, file), 'utf8')}`);
  const [firstRead, ...reread] = Array.from({ length: RUNS + 1 }, () => timed(['workflow', 'apply', commented, '--check']).ms);

  // the store's own part: the same request from this process, on a connection already open
  const store = createClient(WorkflowStoreClient, loom.address);
  const files = readdirSync(folder).map((file) => ({ sourceName: file, text: readFileSync(join(folder, file), 'utf8') }));
  const request = { workflows: files, schedules: [], prune: false, apply: false };
  await call(store, 'applyWorkflows', request);
  const rpc = [];
  for (let run = 0; run < RUNS; run++) {
    const started = performance.now();
    await call(store, 'applyWorkflows', request);
    rpc.push(performance.now() - started);
  }
  store.close();

  const row = (label, values) =>
    console.log(
      `${label.padEnd(58)} ${median(values).toFixed(0).padStart(6)} ms (min ${Math.min(...values).toFixed(0)}, max ${Math.max(...values).toFixed(0)})`,
    );
  console.log(`\nmedian of ${RUNS} runs, each a fresh loom process:`);
  row('baseline: loom workflow list (process + connect + one call)', list);
  row(`loom workflow apply DIR, ${WORKFLOWS} workflows unchanged`, apply);
  row(`loom workflow apply DIR --check, ${WORKFLOWS} unchanged`, check);
  row(`every file's text other, first plan (each read and compared)`, [firstRead]);
  row(`every file's text other, later plans (remembered)`, reread);
  row("ApplyWorkflows from this process (the store's own work)", rpc);
  console.log(
    `\napply / list: ${(median(apply) / median(list)).toFixed(2)}x; apply - list: ${(median(apply) - median(list)).toFixed(0)} ms; target <= 2000 ms: ${median(apply) <= 2000 ? 'met' : 'missed'}`,
  );
  console.log(`load average at end: ${load()}`);
} finally {
  await loom.stop();
}
