import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// scripts/breaking.mjs in a scratch repository of its own (its buf.yaml, one proto file, the workspace's buf), where
// each case makes the commit it needs
const workspace = fileURLToPath(new URL('../../..', import.meta.url));
const script = join(workspace, 'libs/contracts/scripts/breaking.mjs');
const BUF_YAML = 'version: v2\nmodules:\n  - path: proto\nbreaking:\n  use:\n    - FILE\n';

function proto(fields: string): string {
  return `syntax = "proto3";\n\npackage demo.v1;\n\nmessage Thing {\n${fields}}\n`;
}

let repository = '';
beforeAll(() => {
  repository = mkdtempSync(join(tmpdir(), 'loom-breaking-'));
  mkdirSync(join(repository, 'libs/contracts/scripts'), { recursive: true });
  mkdirSync(join(repository, 'proto/demo/v1'), { recursive: true });
  copyFileSync(script, join(repository, 'libs/contracts/scripts/breaking.mjs'));
  symlinkSync(join(workspace, 'node_modules'), join(repository, 'node_modules'));
  writeFileSync(join(repository, '.gitignore'), 'node_modules\n');
  writeFileSync(join(repository, 'buf.yaml'), BUF_YAML);
  git('init', '--quiet', '--initial-branch=main');
});
afterAll(() => {
  rmSync(repository, { recursive: true, force: true });
});

function git(...args: string[]): string {
  return execFileSync('git', ['-c', 'user.name=Test', '-c', 'user.email=test@example.com', ...args], { cwd: repository, encoding: 'utf8' });
}

function commit(fields: string, message: string): void {
  writeFileSync(join(repository, 'proto/demo/v1/thing.proto'), proto(fields));
  git('add', '.');
  git('commit', '--quiet', '-m', message);
}

function check(cwd = repository): { status: number | null; output: string } {
  const result = spawnSync(process.execPath, [join(cwd, 'libs/contracts/scripts/breaking.mjs')], { cwd, encoding: 'utf8' });
  return { status: result.status, output: result.stdout + result.stderr };
}

describe('buf breaking against the previous commit or the last tag', () => {
  it('skips the first commit, saying why', () => {
    commit('  string name = 1;\n', 'first');
    expect(check()).toEqual({ status: 0, output: 'buf breaking: skipped: HEAD is the first commit and there is no tag: nothing to compare against\n' });
  });

  it('passes an added field, and refuses a renamed one naming the field and what to do', () => {
    commit('  string name = 1;\n  int64 size = 2;\n', 'adds size');
    expect(check()).toMatchObject({ status: 0, output: expect.stringContaining('keeps compatibility with the previous commit') as unknown });

    commit('  string title = 1;\n  int64 size = 2;\n', 'renames name');
    const refused = check();
    expect(refused.status).toBe(100);
    expect(refused.output).toContain('Field "1" on message "Thing" changed name from "name" to "title".');
    expect(refused.output).toContain('give its commit a "Breaking-Change: <why>" trailer');
  });

  it('passes a break whose commit carries a Breaking-Change trailer, printing the breaks and the reason', () => {
    git('commit', '--quiet', '--amend', '-m', 'renames name\n\nBreaking-Change: title is what callers send');
    const deliberate = check();
    expect(deliberate.status).toBe(0);
    expect(deliberate.output).toContain('changed name from "name" to "title"');
    expect(deliberate.output).toContain('are deliberate (Breaking-Change: title is what callers send)');
  });

  it('compares against the last tag once there is one: a break since the tag fails even after later commits', () => {
    git('tag', 'v0.1.0');
    commit('  string heading = 1;\n  int64 size = 2;\n', 'renames title');
    commit('  string heading = 1;\n  int64 size = 2;\n  bool done = 3;\n', 'adds done');
    const refused = check();
    expect(refused.status).toBe(100);
    expect(refused.output).toContain('breaks compatibility with the last tag, v0.1.0');
  });

  it('skips a shallow clone, saying how to fetch the history', () => {
    const shallow = mkdtempSync(join(tmpdir(), 'loom-breaking-shallow-'));
    try {
      execFileSync('git', ['clone', '--quiet', '--depth', '1', '--no-tags', `file://${repository}`, shallow]);
      expect(check(shallow).output).toMatch(/^buf breaking: skipped: this clone is shallow \(git clone --depth 1\).*git fetch --deepen=1/);
    } finally {
      rmSync(shallow, { recursive: true, force: true });
    }
  });
});
