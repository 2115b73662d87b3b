// The embedded Neo4j the tests start (libs/testing/src/neo4j.ts): the launcher in libs/testing/neo4j-launcher,
// built once with Maven (Neo4j Community from Maven Central) into the tools cache, in a directory named after a hash
// of its sources, so a second run builds nothing. Run directly, it prints the line to export:
//   export $(node scripts/test-env/neo4j.mjs)
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, relative } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { ensurePackages } from './apt.mjs';
import { toolsCacheDir } from './cache.mjs';
import { TestEnvError, log, printEnvWhenRun } from './log.mjs';

/** The Neo4j version the launcher embeds (the pom's neo4j.version). */
export const NEO4J_VERSION = '5.26.30';

const LAUNCHER_SOURCES = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'libs', 'testing', 'neo4j-launcher');

/** Every file of the launcher's Maven project, sorted, so the hash does not depend on directory order. */
function sourceFiles(dir) {
  return readdirSync(dir)
    .filter((name) => name !== 'target')
    .flatMap((name) => {
      const path = join(dir, name);
      return statSync(path).isDirectory() ? sourceFiles(path) : [path];
    })
    .sort();
}

function sourceHash() {
  const hash = createHash('sha256');
  for (const file of sourceFiles(LAUNCHER_SOURCES)) hash.update(relative(LAUNCHER_SOURCES, file)).update('\0').update(readFileSync(file)).update('\0');
  return hash.digest('hex').slice(0, 12);
}

/** The major version `java -version` reports, or undefined when there is no java. */
function javaMajorVersion() {
  const result = spawnSync('java', ['-version'], { encoding: 'utf8' });
  if (result.error !== undefined || result.status !== 0) return undefined;
  const match = /version "(\d+)/.exec(result.stderr);
  return match === null ? undefined : Number(match[1]);
}

function hasMaven() {
  const result = spawnSync('mvn', ['-v'], { encoding: 'utf8' });
  return result.error === undefined && result.status === 0;
}

function ensureJavaAndMaven() {
  if (javaMajorVersion() === undefined || !hasMaven()) ensurePackages(['default-jdk-headless', 'maven']);
  const major = javaMajorVersion();
  if (major === undefined) throw new TestEnvError('no java on PATH after installing default-jdk-headless');
  // Neo4j 5 runs on Java 17 and 21 only
  if (major < 17) throw new TestEnvError(`Neo4j ${NEO4J_VERSION} needs Java 17 or 21; java on PATH is ${major}`);
  if (!hasMaven()) throw new TestEnvError('no mvn on PATH after installing maven');
}

function build(target) {
  ensureJavaAndMaven();
  // built beside the target and renamed into place, so an interrupted build is never taken for a finished one
  const staging = `${target}.building-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  log(`Neo4j: building the launcher (Neo4j ${NEO4J_VERSION} from Maven Central) into ${target}`);
  const started = Date.now();
  const result = spawnSync(
    'mvn',
    [
      ...['-q', '-B', '-f', join(LAUNCHER_SOURCES, 'pom.xml')],
      `-Dlauncher.buildDirectory=${join(staging, 'build')}`,
      `-DoutputDirectory=${join(staging, 'lib')}`,
      'package',
      'dependency:copy-dependencies',
    ],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
  );
  if (result.error !== undefined || result.status !== 0) {
    rmSync(staging, { recursive: true, force: true });
    const output = `${result.stdout ?? ''}${result.stderr ?? ''}`.trim().split('\n').slice(-20).join('\n');
    throw new TestEnvError(`building the Neo4j launcher with Maven failed (${result.error?.message ?? `exit ${result.status}`}):\n${output}`);
  }
  renameSync(join(staging, 'build', `neo4j-launcher-${NEO4J_VERSION}.jar`), join(staging, 'neo4j-launcher.jar'));
  rmSync(join(staging, 'build'), { recursive: true, force: true });
  try {
    renameSync(staging, target);
  } catch (error) {
    // another run finished the same build first; its copy is as good as this one
    rmSync(staging, { recursive: true, force: true });
    if (!existsSync(join(target, 'neo4j-launcher.jar'))) throw new TestEnvError(`cannot move the built launcher to ${target}`, { cause: error });
  }
  log(`Neo4j: launcher built in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

/** What `java -version` says in full: a class archive serves only the JVM that wrote it. */
function javaVersionText() {
  return spawnSync('java', ['-version'], { encoding: 'utf8' }).stderr.trim();
}

/** How long the archive's training run may take to start and stop Neo4j (seconds on an idle machine). */
const TRAINING_DEADLINE_MS = 300_000;

/**
 * The launcher's class-data-sharing archive (`neo4j-quick-start.jsa`, the name libs/testing/src/neo4j.ts looks for):
 * the classes a Neo4j server loads to start and clear its database, parsed and verified once, so that each test
 * server maps them instead (measured here: a start takes about 6 CPU-seconds from the archive, 10 without). Written
 * by one training run of the launcher, with the flags and class path startNeo4j gives it, and written again when
 * `java -version` changes; without it, servers start as before.
 */
async function ensureClassArchive(launcher) {
  const archive = join(launcher, 'neo4j-quick-start.jsa');
  const stamp = `${archive}.java-version`;
  const java = javaVersionText();
  if (existsSync(archive) && existsSync(stamp) && readFileSync(stamp, 'utf8') === java) return;
  log('Neo4j: writing the class archive test servers start from (once, about half a minute)');
  const home = mkdtempSync(join(tmpdir(), 'loom-neo4j-archive-'));
  const staging = `${archive}.writing-${process.pid}`;
  const child = spawn(
    'java',
    [
      '-Xmx512m',
      // startNeo4j's quick-start flags and class path: an archive serves the class path it was written with
      ...['-XX:TieredStopAtLevel=1', '-XX:+UseSerialGC', `-XX:ArchiveClassesAtExit=${staging}`],
      ...['-cp', [join(launcher, 'neo4j-launcher.jar'), join(launcher, 'lib', '*')].join(delimiter)],
      ...['loom.testing.Neo4jLauncher', home, '0', '--delete-home-on-exit'],
    ],
    { stdio: ['pipe', 'pipe', 'pipe'] },
  );
  const stderr = [];
  createInterface({ input: child.stderr }).on('line', (line) => stderr.push(line));
  const exited = new Promise((resolve) => child.once('close', resolve));
  const timer = setTimeout(() => child.kill('SIGKILL'), TRAINING_DEADLINE_MS);
  try {
    child.stdin.write('archive-training\n');
    const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
    const ready = (await lines.next()).value;
    if (!/^READY bolt:/.test(ready ?? '')) throw new TestEnvError(`the Neo4j launcher answered '${ready}' instead of READY`);
    child.stdin.write('CLEAR\n');
    const cleared = (await lines.next()).value;
    if (cleared !== 'CLEARED') throw new TestEnvError(`the Neo4j launcher answered '${cleared}' to CLEAR`);
    child.stdin.end(); // the launcher stops Neo4j; the JVM writes the archive as it exits
    const code = await exited;
    if (code !== 0 || !existsSync(staging)) throw new TestEnvError(`the Neo4j launcher exited with ${code} without writing ${staging}`);
    renameSync(staging, archive);
    writeFileSync(stamp, java);
  } catch (error) {
    // no archive: test servers start without one, slower; the next run tries again
    child.kill('SIGKILL');
    log(`Neo4j: no class archive (${error instanceof Error ? error.message : String(error)}): ${stderr.slice(-5).join(' | ')}`);
  } finally {
    clearTimeout(timer);
    rmSync(staging, { force: true });
    rmSync(home, { recursive: true, force: true });
  }
}

/** Environment for the tests: LOOM_NEO4J_LAUNCHER, the directory with the launcher's jar and its lib/*.jar. */
export async function ensureNeo4j() {
  const target = join(toolsCacheDir(), `neo4j-launcher-${NEO4J_VERSION}-${sourceHash()}`);
  if (!existsSync(join(target, 'neo4j-launcher.jar'))) build(target);
  else if (javaMajorVersion() === undefined) ensureJavaAndMaven(); // a cached build still needs a java to run on
  await ensureClassArchive(target);
  return { LOOM_NEO4J_LAUNCHER: target };
}

await printEnvWhenRun(import.meta.url, ensureNeo4j, 'build the Neo4j launcher');
