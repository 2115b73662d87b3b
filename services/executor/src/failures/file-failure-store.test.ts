import { appendFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type StoredFailure } from './failure-store.js';
import { FileFailureStore, putLineText } from './file-failure-store.js';

function record(id: string, lastFailed = new Date().toISOString()): StoredFailure {
  return {
    id,
    workflow: 'etl_1',
    workflowVersion: 1,
    component: 'Check',
    instance: 'Check_1',
    failure: { kind: 'invalid-argument', retryable: false, message: 'refused' },
    attempts: 1,
    firstFailed: lastFailed,
    lastFailed,
    messageId: `m-${id}`,
    message: { id: `m-${id}`, body: { n: id }, headers: {} },
  };
}

describe('the file failure store', () => {
  let directory: string;
  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'loom-failure-file-'));
  });
  afterEach(() => rmSync(directory, { recursive: true, force: true }));

  it('keeps records across a reopen (a restart), adds attempts on a second failure, and leaves out a torn last line', async () => {
    const store = new FileFailureStore({ directory, maxBytes: 1_000_000, maxAgeMs: 0, syncIntervalMs: 0 });
    await Promise.all(['a', 'b', 'c'].map((id) => store.put(record(id))));
    await store.put({ ...record('a'), attempts: 2 });
    expect(await store.remove('etl_1', ['b', 'nope'])).toBe(1);
    await store.close();
    // a crash mid-write leaves half a line at the end
    appendFileSync(join(directory, 'etl_1.jsonl'), '{"put":{"id":"d","work');

    const reopened = new FileFailureStore({ directory, maxBytes: 1_000_000, maxAgeMs: 0, syncIntervalMs: 0 });
    const records = await reopened.list('etl_1');
    expect(records.map((kept) => [kept.id, kept.attempts]).sort()).toEqual([
      ['a', 3],
      ['c', 1],
    ]);
    // rewritten with its live records only
    expect(readFileSync(join(directory, 'etl_1.jsonl'), 'utf8').trim().split('\n')).toHaveLength(2);
    expect(await reopened.get('etl_1', 'b')).toBeUndefined();
    await reopened.close();
  });

  it('refuses a record past maxBytes and keeps the rest; drops records past maxAgeMs', async () => {
    const size = Buffer.byteLength(JSON.stringify({ put: record('a') })) + 1;
    const store = new FileFailureStore({ directory, maxBytes: size * 2, maxAgeMs: 60_000, syncIntervalMs: 0 });
    expect(await store.put(record('a'))).toBe('kept');
    expect(await store.put(record('b'))).toBe('kept');
    expect(await store.put(record('c'))).toBe('full');
    // a record already kept may still be replaced
    expect(await store.put(record('a'))).toBe('kept');
    expect((await store.list('etl_1')).map((kept) => kept.id).sort()).toEqual(['a', 'b']);
    await store.remove('etl_1', ['a', 'b']);
    expect(await store.put(record('old', new Date(Date.now() - 120_000).toISOString()))).toBe('kept');
    expect(await store.list('etl_1')).toEqual([]);
    await store.close();
  });

  it("writes a put's line as JSON.stringify does, with and without the optional fields", () => {
    const { message: _message, ...bare } = record('a');
    const full: StoredFailure = {
      ...record('b'),
      failure: { kind: 'unavailable', retryable: true, message: 'a "quoted"\nline', cause: 'Error: é\u2028' },
      traceId: '0af7651916cd43dd8448eb211c80319c',
    };
    for (const kept of [bare, record('a'), full]) expect(putLineText(kept)).toBe(JSON.stringify({ put: kept }) + '\n');
  });

  it('keeps a batch in one call: each answered in order, the one past maxBytes refused, a second failure of one merged', async () => {
    const size = Buffer.byteLength(JSON.stringify({ put: record('a') })) + 1;
    const store = new FileFailureStore({ directory, maxBytes: size * 2, maxAgeMs: 0, syncIntervalMs: 0 });
    expect(await store.putMany([record('a'), record('b'), record('c'), { ...record('a'), attempts: 2 }])).toEqual(['kept', 'kept', 'full', 'kept']);
    expect(await store.putMany([])).toEqual([]);
    await store.close();
    const lines = readFileSync(join(directory, 'etl_1.jsonl'), 'utf8').trim().split('\n');
    expect(lines.map((line) => (JSON.parse(line) as { put: StoredFailure }).put.id)).toEqual(['a', 'b', 'a']);
    const reopened = new FileFailureStore({ directory, maxBytes: size * 2, maxAgeMs: 0, syncIntervalMs: 0 });
    expect((await reopened.list('etl_1')).map((kept) => [kept.id, kept.attempts]).sort()).toEqual([
      ['a', 3],
      ['b', 1],
    ]);
    await reopened.close();
  });

  it('rewrites its file with the live records once replaced and removed ones take more than 4 MiB, losing none', async () => {
    const store = new FileFailureStore({ directory, maxBytes: 100_000_000, maxAgeMs: 0, syncIntervalMs: 1_000 });
    const big = (id: string): StoredFailure => ({ ...record(id), message: { id, body: { text: 'x'.repeat(10_000) }, headers: {} } });
    await store.put(big('keep'));
    // 600 puts and removals of 10 KB records, many at once, as a retry's removals arrive
    await Promise.all(Array.from({ length: 600 }, (_, index) => store.put(big(`gone-${index}`))));
    expect(
      await store.remove(
        'etl_1',
        Array.from({ length: 600 }, (_, index) => `gone-${index}`),
      ),
    ).toBe(600);
    await store.put(big('last'));
    const size = readFileSync(join(directory, 'etl_1.jsonl')).length;
    expect(size).toBeLessThan(100_000);
    expect((await store.list('etl_1')).map((kept) => kept.id).sort()).toEqual(['keep', 'last']);
    await store.close();
    const reopened = new FileFailureStore({ directory, maxBytes: 100_000_000, maxAgeMs: 0, syncIntervalMs: 1_000 });
    expect((await reopened.list('etl_1')).map((kept) => kept.id).sort()).toEqual(['keep', 'last']);
    await reopened.close();
  });

  it('writes a put before answering it with an fsync interval, and holds records on disk only: a rewrite moves none', async () => {
    const path = join(directory, 'etl_1.jsonl');
    const store = new FileFailureStore({ directory, maxBytes: 100_000_000, maxAgeMs: 0, syncIntervalMs: 60_000 });
    // an id JSON escapes is found in its line as any other
    const odd = 'quote " and \\ é';
    expect(await store.putMany([record('a'), record(odd)])).toEqual(['kept', 'kept']);
    const lines = readFileSync(path, 'utf8').trim().split('\n');
    expect(lines.map((line) => (JSON.parse(line) as { put: StoredFailure }).put.id)).toEqual(['a', odd]);
    expect((await store.get('etl_1', odd))?.messageId).toBe(`m-${odd}`);
    const big = (id: string): StoredFailure => ({ ...record(id), message: { id, body: { text: 'x'.repeat(10_000) }, headers: {} } });
    // replaced 600 times: the garbage passes 4 MiB and the file is rewritten while lists and gets read it
    const reads: Promise<unknown>[] = [];
    for (let index = 0; index < 600; index++) {
      await store.put({ ...big('b'), attempts: 1 });
      if (index % 50 === 0) reads.push(store.list('etl_1'), store.get('etl_1', 'a'));
    }
    for (const read of await Promise.all(reads)) expect(read).toBeDefined();
    // 6 MB of lines written, rewritten once past 4 MiB of garbage
    expect(readFileSync(path).length).toBeLessThan(4 * 1024 * 1024);
    expect((await store.get('etl_1', 'b'))?.attempts).toBe(600);
    expect((await store.list('etl_1')).map((kept) => kept.id).sort()).toEqual(['a', 'b', odd].sort());
    await store.close();
    const reopened = new FileFailureStore({ directory, maxBytes: 100_000_000, maxAgeMs: 0, syncIntervalMs: 60_000 });
    expect((await reopened.get('etl_1', 'b'))?.attempts).toBe(600);
    expect((await reopened.get('etl_1', odd))?.id).toBe(odd);
    await reopened.close();
  });

  it('cuts a torn last line off a file of live records before appending to it', async () => {
    const store = new FileFailureStore({ directory, maxBytes: 1_000_000, maxAgeMs: 0, syncIntervalMs: 0 });
    await store.put(record('a'));
    await store.close();
    appendFileSync(join(directory, 'etl_1.jsonl'), '{"put":{"id":"b","workflow":"etl_1"');
    const reopened = new FileFailureStore({ directory, maxBytes: 1_000_000, maxAgeMs: 0, syncIntervalMs: 0 });
    await reopened.put(record('c'));
    await reopened.close();
    const lines = readFileSync(join(directory, 'etl_1.jsonl'), 'utf8').split('\n');
    expect(lines.map((line) => (line === '' ? '' : (JSON.parse(line) as { put: StoredFailure }).put.id))).toEqual(['a', 'c', '']);
  });

  it('rewrites its file while a new line of a record waits for the next write, and finds that line after', async () => {
    const path = join(directory, 'etl_1.jsonl');
    const store = new FileFailureStore({ directory, maxBytes: 100_000_000, maxAgeMs: 0, syncIntervalMs: 60_000 });
    const big: StoredFailure = { ...record('g'), message: { id: 'g', body: { text: 'x'.repeat(10_000) }, headers: {} } };
    const bigBytes = Buffer.byteLength(putLineText(big));
    // 'a' second in the file, after 'z', which goes: the rewrite moves a's line to the start
    await store.put(record('z'));
    await store.put(record('a'));
    await store.remove('etl_1', ['z']);
    const live = () => Buffer.byteLength(putLineText(record('a'))) + bigBytes;
    // replaced until one more replacement takes the garbage past the 4 MiB that starts a rewrite
    for (;;) {
      await store.put(big);
      if (readFileSync(path).length + bigBytes - live() > 4 * 1024 * 1024) break;
    }
    // that replacement is written alone and starts the rewrite, while 'y' and 'a' failing again wait for the next
    // write: a's new line at the same place in its batch (after y's, as long as z's) as its old line in the file
    const [, again] = await Promise.all([store.put(big), store.putMany([record('y'), record('a')])]);
    expect(again).toEqual(['kept', 'kept']);
    expect(readFileSync(path).length).toBeLessThan(100_000);
    expect((await store.get('etl_1', 'a'))?.attempts).toBe(2);
    expect((await store.list('etl_1')).map((kept) => kept.id).sort()).toEqual(['a', 'g', 'y']);
    await store.close();
  });
});
