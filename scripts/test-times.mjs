#!/usr/bin/env node
// Each project's test wall time from its last vitest run (recorded by vitest.shared.ts in .loom/test-times), slowest
// first, then the slowest test files across projects. `node scripts/test-times.mjs` prints the tables; `-- --write`
// writes them into docs/test-times.md.
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dir = join(root, '.loom', 'test-times');

/** The recorded runs, slowest first. */
export function testTimes() {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((file) => file.endsWith('.json'))
    .map((file) => JSON.parse(readFileSync(join(dir, file), 'utf8')))
    .sort((a, b) => b.seconds - a.seconds);
}

/**
 * The tests that failed in the projects' runs that ended after `since` (a Date), as `package: file > suite > test:
 * error` lines: `npm test` lists them last, so the end of a long log (all CI shows) names what failed.
 */
export function failedTests(since) {
  return testTimes()
    .filter((record) => new Date(record.date) >= since)
    .flatMap((record) => (record.failures ?? []).map(({ test, error }) => `${record.package}: ${test}: ${error}`));
}

/** The workspace folders (package.json's workspaces, one level of `*` each). */
function workspaceFolders() {
  const { workspaces } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  return workspaces.flatMap((pattern) =>
    pattern.endsWith('/*')
      ? readdirSync(join(root, pattern.slice(0, -2)), { withFileTypes: true })
          .filter((entry) => entry.isDirectory())
          .map((entry) => join(pattern.slice(0, -2), entry.name))
      : [pattern],
  );
}

/**
 * Every project with tests: its nx name, its package name, and whether its tests share modules (`SHARED_MODULES` in
 * its vitest config: they start no server, change no process-wide state and write only under the temporary directory).
 */
function testedProjects() {
  return workspaceFolders()
    .filter((folder) => existsSync(join(root, folder, 'package.json')))
    .map((folder) => ({ folder, pkg: JSON.parse(readFileSync(join(root, folder, 'package.json'), 'utf8')) }))
    .filter(({ pkg }) => pkg.scripts?.test !== undefined)
    .map(({ folder, pkg }) => {
      const config = join(root, folder, 'vitest.config.ts');
      const shared = existsSync(config) && /defineLoomTestConfig\(\s*SHARED_MODULES\b/.test(readFileSync(config, 'utf8'));
      return { project: pkg.nx?.name ?? pkg.name, package: pkg.name, shared };
    });
}

/** A project's or step's time when nothing recorded it (a new project): a small library's. */
const UNKNOWN_SECONDS = 10;

/** The committed page of the last whole run (docs/test-times.md), or nothing. */
function recordedPage() {
  const page = join(root, 'docs', 'test-times.md');
  return existsSync(page) ? readFileSync(page, 'utf8') : '';
}

/**
 * Each package's test wall time in the whole run docs/test-times.md records (committed, so a fresh clone balances its
 * lanes as that run went), else this machine's last record (.loom/test-times: a new project; a record may be of
 * one file only, so it comes second).
 */
function estimatedSeconds() {
  const seconds = new Map(testTimes().map((time) => [time.package, time.seconds]));
  for (const [, name, time] of recordedPage().matchAll(/^\| `(@loom\/[^`]+)` \| ([\d.]+) \| \d+ \| \d+ \|/gm)) {
    seconds.set(name, Number(time));
  }
  return seconds;
}

/** A step's wall time in the whole run docs/test-times.md records ("| lint | 92.8 |"). */
function stepSeconds(step) {
  const row = recordedPage().match(new RegExp(`^\\| ${step} \\| ([\\d.]+) \\|$`, 'm'));
  return row === null ? UNKNOWN_SECONDS : Number(row[1]);
}

/**
 * How `npm test` runs the tests on two cores (scripts/test.mjs). One core lints while the other checks the format,
 * builds and typechecks, then runs `early`: the projects whose tests share modules, which may run while eslint still
 * walks the folders, as they write nothing there. Then each core runs a lane of the other projects: `lanes[0]` after
 * the lint, `lanes[1]` after the early ones. The lanes are balanced by recorded times: longest project first, each
 * into the lane that would end soonest (the longest-processing-time rule), so the run does not end on one long project.
 */
export function testPlan() {
  const seconds = estimatedSeconds();
  const projects = testedProjects().map((entry) => ({ ...entry, seconds: seconds.get(entry.package) ?? UNKNOWN_SECONDS }));
  const early = projects.filter((project) => project.shared);
  const checks = ['format check', 'build', 'typecheck'].reduce((sum, step) => sum + stepSeconds(step), 0);
  const lanes = [
    { seconds: stepSeconds('lint'), projects: [] },
    { seconds: checks + early.reduce((sum, project) => sum + project.seconds, 0), projects: [] },
  ];
  for (const project of projects.filter((entry) => !entry.shared).sort((a, b) => b.seconds - a.seconds)) {
    const lane = lanes.reduce((soonest, candidate) => (candidate.seconds < soonest.seconds ? candidate : soonest));
    lane.projects.push(project.project);
    lane.seconds += project.seconds;
  }
  return { early: early.map((project) => project.project), lanes: lanes.map((lane) => lane.projects) };
}

/** The table as Markdown. */
export function timesTable(times) {
  const rows = times.map(
    (time) => `| \`${time.package}\` | ${time.seconds.toFixed(1)} | ${time.files} | ${time.tests} | ${time.date.slice(0, 16).replace('T', ' ')} |`,
  );
  return ['| project | wall time (s) | files | tests | run (UTC) |', '|---|---:|---:|---:|---|', ...rows].join('\n');
}

/** The record of the last whole `npm test`: its wall time and each step's (written by scripts/test.mjs). */
const RUN_FILE = join(root, '.loom', 'test-run.json');

/** Records the whole run (scripts/test.mjs, at its end). */
export function writeTestRun(run) {
  mkdirSync(dirname(RUN_FILE), { recursive: true });
  writeFileSync(RUN_FILE, `${JSON.stringify(run)}\n`);
}

/** The whole run's record as Markdown, or nothing when no whole run was recorded. */
function runSection() {
  if (!existsSync(RUN_FILE)) return '';
  const run = JSON.parse(readFileSync(RUN_FILE, 'utf8'));
  const steps = run.phases.map(({ phase, seconds }) => `| ${phase} | ${seconds.toFixed(1)} |`);
  return `## The whole run

The last \`npm test\` (${run.date.slice(0, 16).replace('T', ' ')} UTC) took **${run.seconds.toFixed(0)} s** from its start to
the last test${run.projects ? '' : ' (some projects only)'} (a new machine builds its tools first: see the README's Tests).
The lint runs beside the format check, the build, the typecheck and the first tests, one lane a core, so the steps
add up to more than the whole:

| step | wall time (s) |
|---|---:|
${steps.join('\n')}

`;
}

/** How many of the slowest test files are listed. */
const SLOWEST_FILES = 15;

/** The slowest test files across every project's last run (runs recorded before files were timed have none). */
export function slowestFiles(times, count = SLOWEST_FILES) {
  return times
    .flatMap((time) => (time.fileTimes ?? []).map((file) => ({ ...file, package: time.package })))
    .sort((a, b) => b.seconds - a.seconds)
    .slice(0, count);
}

/** The slowest files as Markdown. */
export function filesTable(files) {
  const rows = files.map((file) => `| \`${file.file}\` | \`${file.package}\` | ${file.seconds.toFixed(1)} | ${file.tests} |`);
  return ['| test file | project | time (s) | tests |', '|---|---|---:|---:|', ...rows].join('\n');
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const times = testTimes();
  if (times.length === 0) {
    console.error('no test run recorded yet: run npm test');
    process.exit(1);
  }
  const files = slowestFiles(times);
  const table = timesTable(times);
  const fileTable = filesTable(files);
  if (!process.argv.includes('--write')) {
    console.log(`${table}\n\nslowest ${files.length} test files:\n\n${fileTable}`);
  } else {
    const total = times.reduce((sum, time) => sum + time.seconds, 0);
    const page = `# Test wall times

Each project's test run as vitest timed it (its Duration: start to end, files run in parallel within the project),
from the last \`npm test\` on a ${cpus().length}-core machine, slowest first. nx runs two projects at a time, so their sum
(${total.toFixed(0)} s here) is not the run's time: that is under "The whole run". Written by
\`node scripts/test-times.mjs --write\` from \`.loom/test-times\`, which every vitest run fills.

${runSection()}## Each project

${table}

## The slowest test files

The ${files.length} slowest test files across the projects, each as vitest timed it (importing it, its setup and its
tests with their hooks). Files of one project run side by side, so a project takes less than the sum of its files.

${fileTable}
`;
    writeFileSync(join(root, 'docs', 'test-times.md'), page);
    console.log('wrote docs/test-times.md');
  }
}
