import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { acquireEmbeddedPostgres, createPool, LOCK_FILE_NAME } from '../src/index.js';
import { useCleanup } from './harness.js';

describe('acquireEmbeddedPostgres', () => {
  const cleanup = useCleanup();

  it('gives every user in the process the same server, and stops it when the last one closes', async () => {
    const dataDir = join(await cleanup.tempDir(), 'pgdata');
    const [first, second] = await Promise.all([acquireEmbeddedPostgres({ dataDir }), acquireEmbeddedPostgres({ dataDir })]);
    expect(second.port).toBe(first.port);

    await first.close();
    await first.close(); // twice is once
    const db = createPool(second.url);
    expect((await db.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    await db.close();

    await second.close();
    expect(existsSync(join(dataDir, LOCK_FILE_NAME))).toBe(false);
  }, 120_000);
});
