import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

// The floor of loom's packages loads no gRPC: @loom/foundation, @loom/domain, the skill kit and every HTTP skill are
// imported each in a fresh node process (fixtures/load-probe.mjs) that reports whether @grpc/grpc-js or Node's http2
// was loaded, and through which imports. The packages load as Node loads them in production, from their built dist
// (the test target builds the CLI, and so everything it depends on, first): plain node cannot load the TypeScript
// sources, and a loader that compiles them would load modules of its own into the process being measured.

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const probe = fileURLToPath(new URL('./fixtures/load-probe.mjs', import.meta.url));
const run = promisify(execFile);

/** What load-probe.mjs reports of one import; a chain is the resolved URLs from the package's entry on, outermost first. */
interface LoadReport {
  readonly target: string;
  /** Why the import failed, when it did. */
  readonly failure?: string;
  /** The chain to @grpc/grpc-js, when it was loaded. */
  readonly grpc?: readonly string[];
  /** When http2 was loaded: the chain to each module that imported or required it (none seen: empty). */
  readonly http2?: readonly (readonly string[])[];
  /** The repository's files the import loaded. */
  readonly files: readonly string[];
}

/** Imports `name` in a fresh node process (no NODE_OPTIONS, no flags) and returns what the probe saw. */
async function load(name: string): Promise<LoadReport> {
  const { stdout } = await run(process.execPath, [probe, name], { cwd: root, env: { ...process.env, NODE_OPTIONS: '' } });
  return JSON.parse(stdout) as LoadReport;
}

/** The package name of every HTTP skill under services/skills. */
function skillPackages(): string[] {
  const skills = join(root, 'services', 'skills');
  return readdirSync(skills)
    .map((folder) => join(skills, folder, 'package.json'))
    .filter((manifest) => existsSync(manifest))
    .map((manifest) => (JSON.parse(readFileSync(manifest, 'utf8')) as { name: string }).name)
    .sort();
}

/** The loaded dist files older than the source they are built from: a build to redo before the answer means anything. */
function staleBuilds(files: readonly string[]): string[] {
  return files
    .map((url) => fileURLToPath(url))
    .filter((file) => {
      const source = file.replace(/\/dist\//, '/src/').replace(/\.js$/, '.ts');
      return source !== file && existsSync(source) && statSync(source).mtimeMs > statSync(file).mtimeMs;
    })
    .map((file) => relative(root, file));
}

/** A chain one module a line, paths relative to the repository. */
function shown(chain: readonly string[]): string {
  return chain.map((url) => (url.startsWith('file:') ? relative(root, fileURLToPath(url)) : url)).join('\n  -> ');
}

/**
 * Fastify requires node:http2 as it loads (lib/server.js), for an HTTP/2 server loom's skills never start: the builtin
 * comes in, gRPC does not. Allowed in the packages that serve HTTP through Fastify, nowhere else.
 */
const FASTIFY_HTTP2 = /\/node_modules\/fastify\/lib\/server\.js$/;

const LIBRARIES = ['@loom/foundation', '@loom/domain'];
const HTTP_SERVERS = ['@loom/skill-service-kit', ...skillPackages()];

describe('the floor of the packages', () => {
  it('covers the skill kit and the four HTTP skills at least', () => {
    expect(HTTP_SERVERS).toEqual(
      expect.arrayContaining(['@loom/skill-service-kit', '@loom/skill-annotation', '@loom/skill-keywords', '@loom/skill-pdf', '@loom/skill-web-data']),
    );
  });

  it.each([...LIBRARIES, ...HTTP_SERVERS])("%s loads no @grpc/grpc-js, and no http2 but Fastify's in an HTTP server", async (name) => {
    const report = await load(name);
    expect(report.failure, `importing ${name} failed; is it built? (npx nx run cli:build)`).toBeUndefined();
    expect(staleBuilds(report.files), `${name} was built before its sources changed: npx nx run cli:build`).toEqual([]);
    expect(report.grpc && shown(report.grpc), `${name} loads @grpc/grpc-js`).toBeUndefined();
    const http2 = report.http2 ?? [];
    expect(report.http2 === undefined || http2.length > 0, `${name} loads http2, by a module the probe did not see`).toBe(true);
    const allowed = (chain: readonly string[]): boolean => HTTP_SERVERS.includes(name) && FASTIFY_HTTP2.test(chain.at(-1) ?? '');
    expect(http2.filter((chain) => !allowed(chain)).map(shown), `${name} loads http2`).toEqual([]);
  });

  it('sees gRPC where it is loaded: @loom/domain/proto, through the generated contracts', async () => {
    const report = await load('@loom/domain/proto');
    expect(shown(report.grpc ?? [])).toMatch(/^libs\/domain\/dist\/workflow-proto\.js\n.*libs\/contracts\/dist\/[\s\S]*@grpc\/grpc-js/);
    expect(report.http2?.map((chain) => shown(chain))).toEqual(expect.arrayContaining([expect.stringMatching(/@grpc\/grpc-js\/build\/src\/\S+\.js$/)]));
  });
});
