import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GraphUnavailableError, isTransientGraphError, openGraphStore, type GraphStore } from '../src/index.js';
import { FaultProxy } from '../src/testing.js';
import { ageResource, closedPort, startTestGraph } from './harness.js';

let graph: Awaited<ReturnType<typeof startTestGraph>>;
let proxy: FaultProxy;
let store: GraphStore;
beforeAll(async () => {
  graph = await startTestGraph();
  proxy = await FaultProxy.start(graph.server);
  // through the proxy the address is not the embedded one, so the store uses an ordinary pool and stream cursors
  store = openGraphStore(ageResource(proxy, { graph: 'faults' }), { age: { streamBatchSize: 7 } });
});
afterAll(async () => {
  await store?.close();
  await proxy?.close();
  await graph?.close();
});

describe('AGE adapter under connection faults', () => {
  it('a connection reset under a query is GraphUnavailableError, transient, and the next query gets a fresh connection', async () => {
    expect(await store.run('RETURN 1 AS one')).toEqual([{ one: 1 }]);

    proxy.resetNext(1);
    const error = await store.run("CREATE (:Lost {name: 'x'})").catch((caught: unknown) => caught);
    expect(proxy.resets).toBe(1);
    expect(error).toBeInstanceOf(GraphUnavailableError);
    expect(error).toMatchObject({ kind: 'unavailable', store: 'age', code: 'ECONNRESET' });
    expect(isTransientGraphError(error)).toBe(true);

    expect(await store.run('MATCH (n:Lost) RETURN count(n) AS c')).toEqual([{ c: 0 }]);
  });

  it('a reset while connecting is transient too', async () => {
    const fresh = openGraphStore(ageResource(proxy, { graph: 'faults' }));
    try {
      proxy.resetNext(1);
      const error = await fresh.run('RETURN 1 AS one').catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(GraphUnavailableError);
      expect(isTransientGraphError(error)).toBe(true);
      expect(await fresh.run('RETURN 1 AS one')).toEqual([{ one: 1 }]);
    } finally {
      await fresh.close();
    }
  });

  it('a server nobody listens on is GraphUnavailableError naming the address, never the password', async () => {
    const port = await closedPort();
    const offline = openGraphStore(ageResource({ host: '127.0.0.1', port }, { graph: 'faults', password: 'hunter2-secret' }));
    try {
      const error = await offline.run('RETURN 1 AS one').catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(GraphUnavailableError);
      expect(error).toMatchObject({ code: 'ECONNREFUSED', address: `127.0.0.1:${port}/postgres graph faults` });
      expect(isTransientGraphError(error)).toBe(true);
      expect((error as Error).message).not.toContain('hunter2-secret');
    } finally {
      await offline.close();
    }
  });

  it('stream reads through a cursor in batches, and leaving early frees the connection', async () => {
    await store.run('UNWIND range(1, 20) AS i CREATE (:Streamed {i: i})');
    const all: unknown[] = [];
    for await (const record of store.stream('MATCH (s:Streamed) RETURN s.i AS i ORDER BY s.i')) all.push(record['i']);
    expect(all).toEqual(Array.from({ length: 20 }, (_, index) => index + 1));

    const firstThree: unknown[] = [];
    for await (const record of store.stream('MATCH (s:Streamed) RETURN s.i AS i ORDER BY s.i')) {
      firstThree.push(record['i']);
      if (firstThree.length === 3) break;
    }
    expect(firstThree).toEqual([1, 2, 3]);
    // the abandoned cursor's transaction was rolled back: writes on the store still commit
    await store.run('CREATE (:Streamed {i: 21})');
    expect(await store.run('MATCH (s:Streamed) RETURN count(s) AS c')).toEqual([{ c: 21 }]);
  });

  it('aborting a stream half-way rejects with the reason and leaves the store usable', async () => {
    await store.run('UNWIND range(1, 20) AS i CREATE (:Aborted {i: i})');
    const controller = new AbortController();
    const reason = new Error('the workflow stopped');
    const seen: unknown[] = [];
    const reading = (async () => {
      for await (const record of store.stream('MATCH (s:Aborted) RETURN s.i AS i ORDER BY s.i', {}, { signal: controller.signal })) {
        seen.push(record['i']);
        if (seen.length === 7) controller.abort(reason); // the end of the first batch: the next FETCH is not sent
      }
    })();
    await expect(reading).rejects.toBe(reason);
    expect(seen).toEqual([1, 2, 3, 4, 5, 6, 7]);
    await store.run('CREATE (:Aborted {i: 21})');
    expect(await store.run('MATCH (s:Aborted) RETURN count(s) AS c')).toEqual([{ c: 21 }]);
  });
});
