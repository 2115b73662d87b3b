import { mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeFileAtomic } from './atomic-file.js';

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
