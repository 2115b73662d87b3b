// The embedded Neo4j the tests start (libs/testing/src/neo4j.ts): the launcher in libs/testing/neo4j-launcher,
// built once with Maven (Neo4j Community from Maven Central) into the tools cache, in a directory named after a hash
// of its sources, so a second run builds nothing. Run directly, it prints the line to export:
//   export $(node scripts/test-env/neo4j.mjs)
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
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

/** Environment for the tests: LOOM_NEO4J_LAUNCHER, the directory with the launcher's jar and its lib/*.jar. */
export async function ensureNeo4j() {
  const target = join(toolsCacheDir(), `neo4j-launcher-${NEO4J_VERSION}-${sourceHash()}`);
  if (!existsSync(join(target, 'neo4j-launcher.jar'))) build(target);
  else if (javaMajorVersion() === undefined) ensureJavaAndMaven(); // a cached build still needs a java to run on
  return { LOOM_NEO4J_LAUNCHER: target };
}

await printEnvWhenRun(import.meta.url, ensureNeo4j, 'build the Neo4j launcher');
