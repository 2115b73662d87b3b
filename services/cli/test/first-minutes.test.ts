import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

// Issue 49 (a newcomer's first ten minutes): `npx loom` after `npm install`, a first build that says what it does, and
// a README whose commands run as written in a clone.

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');

/** The lines of the README's ```sh blocks. */
function shellLines(markdown: string): string[] {
  const lines: string[] = [];
  let language: string | undefined;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) language = language === undefined ? line.slice(3) : undefined;
    else if (language === 'sh') lines.push(line);
  }
  return lines;
}

type FollowBuild = (lines: Iterable<string> | AsyncIterable<string>, total: number, write: (text: string) => void, now: () => number) => Promise<string[]>;

describe("a newcomer's first ten minutes", () => {
  it('npm install links the loom binary into node_modules/.bin, so `npx loom` runs it', () => {
    const manifest = JSON.parse(readFileSync(join(ROOT, 'services/cli/package.json'), 'utf8')) as { bin: Record<string, string> };
    expect(manifest.bin).toEqual({ loom: './bin/loom.js' });
    expect(realpathSync(join(ROOT, 'node_modules/.bin/loom'))).toBe(join(ROOT, 'services/cli/bin/loom.js'));
  });

  it('says in one line how to build when the binary is not built yet (a fresh clone)', () => {
    const clone = mkdtempSync(join(tmpdir(), 'loom-unbuilt-'));
    try {
      mkdirSync(join(clone, 'bin'));
      copyFileSync(join(ROOT, 'services/cli/bin/loom.js'), join(clone, 'bin/loom.js'));
      const result = spawnSync(process.execPath, [join(clone, 'bin/loom.js'), '--version'], { encoding: 'utf8' });
      expect(result.status).toBe(1);
      expect(result.stderr).toMatch(/^loom: not built yet \(no .*dist\/main\.js\): run `npm run build` \(or `npm start`, .*\) in the repository first\n$/);
    } finally {
      rmSync(clone, { recursive: true, force: true });
    }
  });

  it('npm start builds through scripts/build-cli.mjs, which prints a line as each step ends', async () => {
    const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(manifest.scripts.start).toMatch(/^node scripts\/build-cli\.mjs && node --no-node-snapshot services\/cli\/dist\/main\.js serve /);

    const { followBuild } = (await import(pathToFileURL(join(ROOT, 'scripts/build-cli.mjs')).href)) as { followBuild: FollowBuild };
    // nx's static output, as `nx run cli:build --output-style=static` prints it
    const nx = [
      '',
      '> nx run foundation:build  [local cache]',
      '',
      '> @loom/foundation@0.1.0 build',
      '> tsc -p tsconfig.build.json',
      '> nx run contracts:generate',
      '> nx run cli:build',
      ' NX   Successfully ran target build for project cli and 2 tasks it depends on',
    ];
    let clock = 0;
    const written: string[] = [];
    // each line 20 s after the one before
    function* timed(): Generator<string> {
      for (const line of nx) {
        clock += 20_000;
        yield line;
      }
    }
    const output = await followBuild(
      timed(),
      3,
      (text) => written.push(text),
      () => clock,
    );
    expect(written).toEqual([
      'loom: [1/3] foundation taken from the cache (40 s)\n',
      'loom: [2/3] contracts:generate built (120 s)\n',
      'loom: [3/3] cli built (140 s)\n',
    ]);
    expect(output).toEqual(nx);
  });

  it('the README runs every loom command of a clone as `npx loom`, and says how the build goes', () => {
    const commands = shellLines(README).filter((line) => /^(npx )?loom /.test(line));
    expect(commands.length).toBeGreaterThan(40);
    expect(commands.filter((line) => !line.startsWith('npx loom '))).toEqual([]);
    expect(README).toMatch(/npm install && npm start[^\n]*\nnpx loom health/);
    expect(README).toMatch(/The first build of a clone compiles every package the binary\s+uses \(26 steps/);
  });

  it('the README gives the gRPC metadata key of a token where the token is introduced', () => {
    const running = README.slice(README.indexOf('## Running loom'), README.indexOf('## ', README.indexOf('## Running loom') + 3));
    expect(running).toMatch(/`--token` \(env `LOOM_TOKEN`\)[^.]*\. A token travels as the\s+gRPC metadata `authorization: Bearer <token>`/);
  });
});
