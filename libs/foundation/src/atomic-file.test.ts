import { mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isAtomicWriteLeftover, writeFileAtomic, writeFilesAtomic } from './atomic-file.js';

describe('writeFileAtomic', () => {
  it('replaces the content, leaves no temp file behind and applies the mode', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'loom-atomic-'));
    const path = join(dir, 'nested', 'key ring.json');
    await writeFileAtomic(path, 'first', { mode: 0o600 });
    await writeFileAtomic(path, 'second', { mode: 0o600 });
    expect(readFileSync(path, 'utf8')).toBe('second');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readdirSync(join(dir, 'nested'))).toEqual(['key ring.json']);
  });

  it('never shows a partial file to concurrent writers and readers', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'loom-atomic-'));
    const path = join(dir, 'value.txt');
    const contents = Array.from({ length: 20 }, (_, i) => String(i).repeat(100_000));
    await Promise.all(contents.map((content) => writeFileAtomic(path, content)));
    expect(contents).toContain(readFileSync(path, 'utf8'));
    expect(readdirSync(dir)).toEqual(['value.txt']);
  });
});

describe('writeFilesAtomic', () => {
  it('writes several files of one directory, and their temp files are recognisable leftovers', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'loom-atomic-'));
    await writeFilesAtomic([
      { path: join(dir, 'a flow.workflow.json'), data: '{"a":1}' },
      { path: join(dir, 'a flow.json'), data: '{"version":1}', mode: 0o600 },
    ]);
    expect(readdirSync(dir).sort()).toEqual(['a flow.json', 'a flow.workflow.json']);
    expect(readFileSync(join(dir, 'a flow.workflow.json'), 'utf8')).toBe('{"a":1}');
    expect(statSync(join(dir, 'a flow.json')).mode & 0o777).toBe(0o600);
    expect(isAtomicWriteLeftover('.a flow.json.0123456789ab.tmp')).toBe(true);
    expect(isAtomicWriteLeftover('a flow.json')).toBe(false);
  });

  it('refuses files of different directories before writing any', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'loom-atomic-'));
    await expect(
      writeFilesAtomic([
        { path: join(dir, 'a'), data: 'a' },
        { path: join(dir, 'sub', 'b'), data: 'b' },
      ]),
    ).rejects.toThrow(/is not in/);
    expect(readdirSync(dir)).toEqual([]);
  });
});
