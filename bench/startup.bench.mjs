// How long `loom serve` (all six services, production defaults) takes from spawn to 'loom listening', and its resident
// memory then, on a fresh data directory and on an existing one; and the wall time of `loom --version` and
// `loom health` (the binary as a user runs it, bin/loom.js), next to a bare `node -e 0` in the same run. Medians of 3.
// With LOOM_BASELINE_MAIN=<another checkout>/services/cli/dist/main.js the same is measured for that build, same run.
// Every data directory is temporary and removed.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loomMain, median, startLoomServe } from './loom-serve.mjs';

const RUNS = 3;
const MB = 1024 * 1024;

function wallMs(command, args) {
  const started = performance.now();
  const result = spawnSync(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const ms = performance.now() - started;
  return { ms, status: result.status, stdout: result.stdout.toString() };
}

async function measureBuild(main, args) {
  const fresh = [];
  const existing = [];
  const cli = { version: [], health: [], node: [] };
  const bin = join(dirname(dirname(main)), 'bin', 'loom.js');
  for (let run = 0; run < RUNS; run++) {
    const directory = mkdtempSync(join(tmpdir(), 'loom-bench-startup-'));
    try {
      const first = await startLoomServe({ main, cwd: directory, args });
      fresh.push(first);
      await first.stop();
      const second = await startLoomServe({ main, cwd: directory, args });
      existing.push(second);
      cli.node.push(wallMs(process.execPath, ['-e', '0']).ms);
      cli.version.push(wallMs(process.execPath, [bin, '--version']).ms);
      const health = wallMs(process.execPath, [bin, 'health', '--address', second.address]);
      if (health.status !== 0) throw new Error(`loom health answered ${health.status}: ${health.stdout}`);
      cli.health.push(health.ms);
      await second.stop();
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  }
  const figures = (starts) => ({
    ms: median(starts.map((start) => start.startMs)),
    rssMb: median(starts.map((start) => start.rssAtListening / MB)),
    runs: starts.map((start) => `${Math.round(start.startMs)} ms / ${Math.round(start.rssAtListening / MB)} MB`),
  });
  return { fresh: figures(fresh), existing: figures(existing), version: median(cli.version), health: median(cli.health), node: median(cli.node), cliRuns: cli };
}

function report(label, build) {
  console.log(`\n${label}`);
  console.log(
    `fresh data directory: spawn to listening ${Math.round(build.fresh.ms)} ms, RSS at listening ${Math.round(build.fresh.rssMb)} MB (median of ${RUNS}: ${build.fresh.runs.join(', ')})`,
  );
  console.log(
    `existing data directory: spawn to listening ${Math.round(build.existing.ms)} ms, RSS at listening ${Math.round(build.existing.rssMb)} MB (median of ${RUNS}: ${build.existing.runs.join(', ')})`,
  );
  console.log(
    `loom --version ${Math.round(build.version)} ms, loom health ${Math.round(build.health)} ms, node -e 0 ${Math.round(build.node)} ms (medians of ${RUNS}; runs: --version ${build.cliRuns.version.map(Math.round).join(' / ')}, health ${build.cliRuns.health.map(Math.round).join(' / ')}, node ${build.cliRuns.node.map(Math.round).join(' / ')})`,
  );
}

// this build generates a development key ring only when told to (loom.secrets.generateKeys); the baseline did it unasked
const current = await measureBuild(loomMain, ['--set', 'loom.secrets.generateKeys=true']);
report(`this build (${fileURLToPath(new URL('..', import.meta.url))})`, current);
const baselineMain = process.env.LOOM_BASELINE_MAIN;
if (baselineMain !== undefined && baselineMain !== '') {
  const baseline = await measureBuild(baselineMain, []);
  report(`baseline build (${baselineMain}), same run`, baseline);
  const ratio = (now, before) => `${(now / before).toFixed(2)}x`;
  console.log('\nthis build / baseline:');
  console.log(
    `fresh start ${ratio(current.fresh.ms, baseline.fresh.ms)} time, ${ratio(current.fresh.rssMb, baseline.fresh.rssMb)} RSS; existing start ${ratio(current.existing.ms, baseline.existing.ms)} time, ${ratio(current.existing.rssMb, baseline.existing.rssMb)} RSS`,
  );
  console.log(`loom --version ${ratio(current.version, baseline.version)}, loom health ${ratio(current.health, baseline.health)}`);
}
process.exit(0);
