#!/usr/bin/env node
// `npm start`'s first step: builds the loom binary (`nx run cli:build`: the CLI and every package it uses) and says
// what it does while it does it, a line per package built. A fresh clone's first build compiles them all and takes
// minutes; later starts take seconds, nx building only what changed. On failure it prints nx's whole output.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const NX = fileURLToPath(new URL('../node_modules/nx/bin/nx.js', import.meta.url));
const TARGET = 'cli:build';

/**
 * Follows nx's static output (a `> nx run <project>:<target>` line as each task's output is printed, once it ended)
 * and writes one progress line per task, with the time since the start: `loom: [19/26] service-kit built (20 s)`,
 * `… taken from the cache …` when nx restored it; a task other than a build is named with its target
 * (`contracts:generate`). Answers nx's whole output, for a failure's report.
 */
export async function followBuild(lines, total, write, now = () => Date.now()) {
  const started = now();
  const output = [];
  let done = 0;
  for await (const line of lines) {
    output.push(line);
    const task = /^> nx run (\S+):(\S+)(.*)$/.exec(line.trim());
    if (task === null) continue;
    done += 1;
    const [, project, target, rest] = task;
    const seconds = Math.round((now() - started) / 1000);
    const how = /\[(local|remote) cache\]/.test(rest) ? 'taken from the cache' : 'built';
    write(`loom: [${done}/${total}] ${target === 'build' ? project : `${project}:${target}`} ${how} (${seconds} s)\n`);
  }
  return output;
}

/** How many tasks `nx run cli:build` runs (its task graph, without running it); undefined when nx cannot say. */
function taskCount() {
  const graph = spawnSync(process.execPath, [NX, 'run', TARGET, '--graph=stdout'], { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  try {
    return Object.keys(JSON.parse(graph.stdout).tasks.tasks).length;
  } catch {
    return undefined;
  }
}

async function main() {
  const fresh = !existsSync(fileURLToPath(new URL('../services/cli/dist/main.js', import.meta.url)));
  const total = taskCount() ?? '?';
  process.stdout.write(
    fresh
      ? `loom: the first build of this clone: ${total} steps, a minute or two on an idle two-core machine and several when it is busy; later starts take seconds\n`
      : `loom: building what changed since the last build (${total} steps)\n`,
  );
  const child = spawn(process.execPath, [NX, 'run', TARGET, '--output-style=static'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  const errors = [];
  child.stderr.on('data', (chunk) => errors.push(chunk));
  const exited = new Promise((resolve) => child.on('close', (code) => resolve(code ?? 1)));
  const output = await followBuild(createInterface({ input: child.stdout }), total, (text) => process.stdout.write(text));
  const code = await exited;
  if (code !== 0) {
    process.stderr.write(`${output.join('\n')}\n${Buffer.concat(errors).toString()}`);
    process.stderr.write(`loom: the build failed (nx exited with ${code}); its output is above\n`);
    process.exit(code);
  }
  process.stdout.write('loom: built; starting loom serve\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
