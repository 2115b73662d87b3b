// Time from `loom serve` to all of 1,000 stored autoStart workflows RUNNING (target: 3 s), against a baseline measured
// in the same run: the same `loom serve` over the same 1,000 workflows with autoStart off, to listening. Workflows are
// inlet → logger files placed in the storage root by hand; "RUNNING" is counted from the executor's own log line per
// started run, and checked afterwards with ListSchedules.
import { mkdirSync, writeFileSync } from 'node:fs';
import { startLoomServe } from './loom-serve.mjs';
import { scratchDir } from './scratch.mjs';
import { join } from 'node:path';
import { SchedulerClient, WorkflowState } from '@loom/contracts';
import { COMPONENT_KINDS, componentInstance as instance, serializeWorkflowJson } from '@loom/domain';
import { call, createClient } from '@loom/service-kit';

const WORKFLOWS = Number(process.env.BENCH_WORKFLOWS ?? 1000);
const TARGET_MS = 3000;

/** Writes the workflow files (again: a push of autoStart on). */
function writeWorkflows(root, autoStart) {
  mkdirSync(root, { recursive: true });
  for (let index = 0; index < WORKFLOWS; index++) {
    const id = (n) => `7b0c1d2e-0000-4000-8000-${String(n).padStart(12, '0')}`;
    const inlet = instance(COMPONENT_KINDS.INLET, `In_${id(1_000_000 + index)}`);
    const sink = instance(COMPONENT_KINDS.LOGGER, `Log_${id(2_000_000 + index)}`);
    const name = `Bench ${index}_${id(index)}`;
    const text = serializeWorkflowJson({
      name,
      autoStart,
      components: [inlet, sink],
      links: [{ from: inlet.name, to: sink.name }],
      resources: [],
      skills: [],
      workflowResources: [],
    });
    writeFileSync(join(root, `${name}.workflow.json`), text);
  }
}

/** Runs `loom serve` in `cwd` on its workflows; resolves with the times (ms since spawn) it listened and, with autoStart, all ran. */
async function serve(cwd, autoStart) {
  const started = new Set();
  let takeover;
  let allStarted;
  let failed;
  const everyStart = new Promise((resolve, reject) => {
    allStarted = resolve;
    failed = reject;
  });
  const loom = await startLoomServe({
    cwd,
    args: [
      '--set',
      `loom.datasource.filesystemRoot=${join(cwd, 'workflows')}`,
      '--set',
      'loom.auth.allowAnonymous=true',
      '--set',
      'loom.secrets.generateKeys=true',
    ],
    onLine: (entry) => {
      if (entry.service === 'executor' && entry.msg === 'workflow started') {
        started.add(entry.workflow);
        if (started.size === WORKFLOWS) allStarted(performance.now());
      }
      if (entry.msg === 'autoStart workflows started') takeover = entry.ms;
    },
  });
  let stopping = false;
  loom.child.on('exit', (code) => stopping || failed(new Error(`loom exited with ${code}`)));
  const listening = loom.startMs;
  const allRunning = autoStart ? (await everyStart) - loom.spawnedAt : listening;
  let running = 0;
  if (autoStart) {
    const client = createClient(SchedulerClient, loom.address);
    const { schedules } = await call(client, 'listSchedules', {});
    running = schedules.filter((schedule) => schedule.runState === WorkflowState.WORKFLOW_STATE_RUNNING).length;
    client.close();
  }
  stopping = true;
  await loom.stop();
  return { listening, allRunning, running, takeover };
}

// An installation that has 1,000 workflows stored has been started before: its embedded PostgreSQL (the secrets
// service's PGlite) exists. The first start of each directory creates it (initdb) and is reported apart.
const baselineDir = scratchDir('loom-bench-scheduler-');
writeWorkflows(join(baselineDir, 'workflows'), false);
const cold = await serve(baselineDir, false);
const baseline = await serve(baselineDir, false);
console.log(`first start of a new directory (embedded PostgreSQL created), autoStart off, to listening  ${cold.listening.toFixed(0)} ms`);
console.log(`baseline: loom serve over ${WORKFLOWS} stored workflows, autoStart off, to listening   ${baseline.listening.toFixed(0)} ms`);
const measuredDir = scratchDir('loom-bench-scheduler-');
writeWorkflows(join(measuredDir, 'workflows'), false);
await serve(measuredDir, false);
writeWorkflows(join(measuredDir, 'workflows'), true);
const measured = await serve(measuredDir, true);
console.log(`loom serve over ${WORKFLOWS} autoStart workflows: listening                              ${measured.listening.toFixed(0)} ms`);
console.log(`  to all ${WORKFLOWS} RUNNING (executor log), from spawn                                 ${measured.allRunning.toFixed(0)} ms`);
console.log(`  scheduler's own time from taking over to the last start                            ${measured.takeover ?? '?'} ms`);
console.log(`  RUNNING in ListSchedules afterwards: ${measured.running} of ${WORKFLOWS}`);
const coldDir = scratchDir('loom-bench-scheduler-');
writeWorkflows(join(coldDir, 'workflows'), true);
const coldStart = await serve(coldDir, true);
console.log(`the same on a new directory (embedded PostgreSQL created first), to all RUNNING         ${coldStart.allRunning.toFixed(0)} ms`);
console.log(
  `ratio all RUNNING / baseline listening: ${(measured.allRunning / baseline.listening).toFixed(2)}x; target <= ${TARGET_MS} ms: ${measured.allRunning <= TARGET_MS ? 'met' : 'missed'}`,
);
