import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { scriptGrants, StateInGrantError, type StatePath } from './script-grants.js';

const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** An installation-like tree with loom's state inside it, as `npm start` has it. */
function tree(): { root: string; state: StatePath[]; helper: string } {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'loom-grants-')));
  made.push(root);
  const helper = realpathSync(mkdtempSync(join(tmpdir(), 'loom-grants-helper-')));
  made.push(helper);
  mkdirSync(join(root, '.loom', 'pgdata'), { recursive: true });
  mkdirSync(join(root, 'conf'));
  mkdirSync(join(root, 'lib'));
  for (const [path, text] of [
    ['app.yaml', 'app'],
    ['lib/code.js', 'code'],
    ['conf/other.yaml', 'other'],
    ['conf/tls.key', 'KEY'],
    ['.loom/keyring.json', 'KEYRING'],
    ['.loom/pgdata/PG_VERSION', 'PG'],
    ['audit.log', 'AUDIT'],
    ['audit.log.000000000001', 'ROTATED'],
    ['.audit.log.0a1b2c.tmp', 'TEMP'],
  ] as const) {
    writeFileSync(join(root, path), text);
  }
  symlinkSync(join(root, '.loom', 'keyring.json'), join(root, 'innocent-link'));
  symlinkSync(join(root, 'nowhere'), join(root, 'dangling'));
  const state: StatePath[] = [
    { key: 'loom.data.directory', path: join(root, '.loom'), kind: 'directory' },
    { key: 'loom.tls.keyFile', path: join(root, 'conf', 'tls.key'), kind: 'file' },
    { key: 'loom.security.audit.log.path', path: join(root, 'audit.log'), kind: 'file' },
  ];
  return { root, state, helper };
}

describe('script grants', () => {
  it('grant a directory holding state entry by entry, leaving out the state, its rotated and temp files, and links into it', () => {
    const { root, state, helper } = tree();
    const grants = scriptGrants(state, { required: [helper], optional: [root] });
    expect(grants.reads).toEqual([join(root, 'app.yaml'), join(root, 'conf', 'other.yaml'), join(root, 'lib'), helper].sort());
    expect(grants.split).toEqual([root, join(root, 'conf')]);
    expect(grants.mounts).toEqual([root]);
  });

  it('grant a root without state whole, and leave out a root that state holds', () => {
    const { root, state, helper } = tree();
    expect(scriptGrants(state, { required: [helper], optional: [join(root, 'lib'), join(root, '.loom', 'pgdata')] })).toEqual({
      reads: [join(root, 'lib'), helper].sort(),
      mounts: [join(root, 'lib')],
      split: [],
    });
  });

  it('refuse, naming the path and the key, a state path holding what the script host must read', () => {
    const { root, state } = tree();
    const required = join(root, '.loom', 'pgdata');
    expect(() => scriptGrants(state, { required: [required], optional: [] })).toThrow(StateInGrantError);
    expect(() => scriptGrants(state, { required: [required], optional: [] })).toThrow(/^loom\.data\.directory: .*\.loom is loom's state/);
  });

  it("hold under Node's permission model: the state is refused, the rest reads", () => {
    const { root, state, helper } = tree();
    const probe = join(helper, 'probe.cjs');
    writeFileSync(
      probe,
      `const fs = require('fs'); const out = {}; for (const p of JSON.parse(process.argv[2])) { try { out[p] = fs.readFileSync(p, 'utf8'); } catch (e) { out[p] = e.code; } } console.log(JSON.stringify(out));`,
    );
    const grants = scriptGrants(state, { required: [helper], optional: [root] });
    const paths = [
      'app.yaml',
      'lib/code.js',
      'conf/other.yaml',
      'conf/tls.key',
      '.loom/keyring.json',
      '.loom/pgdata/PG_VERSION',
      'audit.log',
      'audit.log.000000000001',
      '.audit.log.0a1b2c.tmp',
      'innocent-link',
    ].map((path) => join(root, path));
    // join would take the `..` out: Node gets it as written
    paths.push(`${root}/conf/../.loom/keyring.json`);
    const result = spawnSync(
      process.execPath,
      ['--experimental-permission', ...grants.reads.map((path) => `--allow-fs-read=${path}`), probe, JSON.stringify(paths)],
      { encoding: 'utf8' },
    );
    const read = JSON.parse(result.stdout) as Record<string, string>;
    expect(Object.values(read)).toEqual(['app', 'code', 'other', ...Array.from({ length: 8 }, () => 'ERR_ACCESS_DENIED')]);
  });
});
