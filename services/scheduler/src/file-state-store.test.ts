import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SchedulerStateError } from './errors.js';
import { FileStateStore } from './file-state-store.js';
import { type FireClaim } from './state-store.js';

const file = (): string => join(mkdtempSync(join(tmpdir(), 'loom-scheduler-state-')), 'state.json');
const claim = (scheduledAt: string, kind: FireClaim['kind'] = 'cron'): FireClaim => ({
  workflow: 'Import_1b2c3d4e-0000-4000-8000-000000000001',
  scheduledAt: new Date(scheduledAt),
  kind,
  holder: 'test',
  claimedAt: new Date(scheduledAt),
});

describe('FileStateStore', () => {
  it('lets each cron fire through once, keeps it on disk before it acts, and counts outcomes', async () => {
    const path = file();
    const store = await FileStateStore.open(path);
    const fire = claim('2026-01-01T00:00:01Z');
    expect(await store.claim(fire)).toBe(true);
    expect(await store.claim(fire)).toBe(false);
    expect(await store.claim(claim('2026-01-01T00:00:00Z'))).toBe(false); // before handledUntil
    const onDisk = JSON.parse(readFileSync(path, 'utf8')) as { workflows: Record<string, { unfinished: unknown[]; handledUntil: string }> };
    expect(Object.values(onDisk.workflows)[0]?.unfinished).toHaveLength(1);
    await store.settle(fire, 'started');

    const reopened = await FileStateStore.open(path);
    const [record] = (await reopened.records()).values();
    expect(record).toMatchObject({ paused: false, lastFireTime: new Date('2026-01-01T00:00:01Z'), counts: { started: 1, skipped: 0 } });
    expect(await reopened.unfinished()).toEqual([]);
  });

  it('refuses cron fires while paused, not manual ones; a resume marks the pause handled', async () => {
    const store = await FileStateStore.open(file());
    const workflow = claim('2026-01-01T00:00:00Z').workflow;
    await store.setPaused(workflow, true, new Date('2026-01-01T00:00:00Z'));
    expect(await store.claim(claim('2026-01-01T00:00:05Z'))).toBe(false);
    expect(await store.claim(claim('2026-01-01T00:00:05.123Z', 'manual'))).toBe(true);
    const resumed = await store.setPaused(workflow, false, new Date('2026-01-01T00:01:00Z'));
    expect(resumed.handledUntil?.toISOString()).toBe('2026-01-01T00:01:00.000Z');
    expect(await store.claim(claim('2026-01-01T00:00:30Z'))).toBe(false);
    expect(await store.claim(claim('2026-01-01T00:01:01Z'))).toBe(true);
    expect((await store.unfinished()).map((fire) => fire.kind)).toEqual(['manual', 'cron']);
  });

  it('refuses a file that is not its state rather than starting empty', async () => {
    const path = file();
    writeFileSync(path, '{"something": "else"}');
    await expect(FileStateStore.open(path)).rejects.toThrow(SchedulerStateError);
    writeFileSync(path, 'not json');
    await expect(FileStateStore.open(path)).rejects.toThrow(/is not JSON/);
  });
});
