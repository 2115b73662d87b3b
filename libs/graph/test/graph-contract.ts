import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GraphQueryError, GraphReadOnlyError, isTransientGraphError, type GraphNode, type GraphRelationship, type GraphStore } from '../src/index.js';

/** How the contract reaches a store: a writable one, a read_only one on the same graph, and a label prefix unique to this run. */
export interface ContractTarget {
  open(options: { readOnly: boolean }): GraphStore | Promise<GraphStore>;
  /** Prepended to every label, so runs on a shared server do not see each other's nodes. */
  readonly prefix: string;
}

/**
 * The behaviour both adapters must share, with Cypher that runs unchanged on Neo4j and on AGE: loom's own queries
 * must work on either. Registers one describe block; `target` is called in beforeAll.
 */
export function describeGraphStoreContract(name: string, target: () => ContractTarget | Promise<ContractTarget>): void {
  describe(name, () => {
    let store: GraphStore;
    let readOnly: GraphStore;
    let L: (label: string) => string;

    beforeAll(async () => {
      const resolved = await target();
      L = (label) => `${resolved.prefix}${label}`;
      store = await resolved.open({ readOnly: false });
      readOnly = await resolved.open({ readOnly: true });
    });
    afterAll(async () => {
      // a shared server keeps nothing of this run
      for (const label of ['Person', 'Tag', 'Item', 'Row', 'Order']) await store?.run(`MATCH (n:${L(label)}) DETACH DELETE n`);
      await readOnly?.close();
      await store?.close();
    });

    const count = async (label: string): Promise<unknown> => (await store.run(`MATCH (n:${L(label)}) RETURN count(n) AS c`))[0]?.['c'];

    it('creates nodes from parameters and returns nodes, relationships and paths in the plain shape', async () => {
      const created = await store.run(`CREATE (a:${L('Person')} {name: $name, age: $age, tags: $tags}) RETURN a`, { name: 'Ann', age: 42, tags: ['x', 'y'] });
      expect(created).toEqual([{ a: { id: expect.any(String), labels: [L('Person')], properties: { name: 'Ann', age: 42, tags: ['x', 'y'] } } }]);

      await store.run(`CREATE (b:${L('Person')} {name: $name, age: 7})`, { name: 'Bob' });
      await store.run(`MATCH (a:${L('Person')} {name: $from}), (b:${L('Person')} {name: $to}) CREATE (a)-[:${L('KNOWS')} {since: $since}]->(b)`, {
        from: 'Ann',
        to: 'Bob',
        since: 2020,
      });
      const [row] = await store.run(`MATCH p = (a:${L('Person')})-[r:${L('KNOWS')}]->(b) RETURN a, r, b, p`);
      const a = row!['a'] as GraphNode;
      const b = row!['b'] as GraphNode;
      const r = row!['r'] as GraphRelationship;
      expect(a.properties['name']).toBe('Ann');
      expect(b).toEqual({ id: expect.any(String), labels: [L('Person')], properties: { name: 'Bob', age: 7 } });
      expect(r).toEqual({ id: expect.any(String), type: L('KNOWS'), start: a.id, end: b.id, properties: { since: 2020 } });
      expect(row!['p']).toEqual({ nodes: [a, b], relationships: [r] });
    });

    it('MERGE on a node is idempotent when run again', async () => {
      const first = await store.run(`MERGE (t:${L('Tag')} {value: $value}) RETURN t`, { value: 'graph' });
      const second = await store.run(`MERGE (t:${L('Tag')} {value: $value}) RETURN t`, { value: 'graph' });
      expect(second).toEqual(first);
      expect(await count('Tag')).toBe(1);
    });

    it('writes a batch of 100 maps with UNWIND and counts them', async () => {
      const batch = Array.from({ length: 100 }, (_, index) => ({ id: index, name: `item ${index}`, score: index / 4 }));
      expect(await store.run(`UNWIND $batch AS row CREATE (:${L('Item')} {id: row.id, name: row.name, score: row.score})`, { batch })).toEqual([]);

      expect(await count('Item')).toBe(100);
      const stats = await store.run(`MATCH (i:${L('Item')}) RETURN sum(i.id) AS total, max(i.score) AS top`);
      expect(stats).toEqual([{ total: 4950, top: 24.75 }]);
      expect(await store.run(`MATCH (i:${L('Item')} {id: $id}) RETURN i.name AS name, i.score AS score`, { id: 7 })).toEqual([{ name: 'item 7', score: 1.75 }]);
    });

    it('stream yields the records in order', async () => {
      await store.run(`UNWIND $ids AS id CREATE (:${L('Row')} {id: id})`, { ids: [3, 1, 2] });
      const seen: unknown[] = [];
      for await (const record of store.stream(`MATCH (r:${L('Row')}) RETURN r.id AS id ORDER BY r.id`)) seen.push(record['id']);
      expect(seen).toEqual([1, 2, 3]);
    });

    it('writeTransaction commits all of its statements, or none when one fails', async () => {
      const ids = await store.writeTransaction(async (tx) => {
        await tx.run(`CREATE (:${L('Order')} {n: 1})`);
        await tx.run(`CREATE (:${L('Order')} {n: 2})`);
        return (await tx.run(`MATCH (o:${L('Order')}) RETURN count(o) AS c`))[0]?.['c'];
      });
      expect(ids).toBe(2);

      const failing = store.writeTransaction(async (tx) => {
        await tx.run(`CREATE (:${L('Order')} {n: 3})`);
        await tx.run(`CREATE (:${L('Order')} {n: 4})`);
        await tx.run(`MATCH (o:${L('Order')} RETURN o`); // a syntax error half-way
      });
      await expect(failing).rejects.toBeInstanceOf(GraphQueryError);
      expect(await count('Order')).toBe(2);

      const ownFailure = new RangeError('the work itself failed');
      await expect(
        store.writeTransaction(async (tx) => {
          await tx.run(`CREATE (:${L('Order')} {n: 5})`);
          throw ownFailure;
        }),
      ).rejects.toBe(ownFailure);
      expect(await count('Order')).toBe(2);
    });

    it('a syntax error is a GraphQueryError with the store message, not transient', async () => {
      const error = await store.run(`MATCH (n:${L('Person')} RETURN n`).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(GraphQueryError);
      expect(error).toMatchObject({ kind: 'failed-precondition', store: store.kind });
      expect((error as Error).message).toMatch(/syntax|invalid input/i);
      expect(isTransientGraphError(error)).toBe(false);
    });

    it('a read_only resource reads, and refuses writes before sending them', async () => {
      const before = await count('Person');
      expect(readOnly.readOnly).toBe(true);
      // a writing keyword inside a string literal is data, not a clause
      expect(await readOnly.run(`MATCH (n:${L('Person')}) WHERE n.name <> 'CREATE (x)' RETURN count(n) AS c`)).toEqual([{ c: before }]);

      for (const [query, clause] of [
        [`CREATE (:${L('Person')} {name: 'Eve'})`, 'CREATE'],
        [`MATCH (n:${L('Person')}) SET n.age = 1`, 'SET'],
        [`MATCH (n:${L('Person')}) DETACH DELETE n`, 'DETACH'],
        [`MERGE (:${L('Person')} {name: 'Eve'})`, 'MERGE'],
      ] as const) {
        const error = await readOnly.run(query).catch((caught: unknown) => caught);
        expect(error).toBeInstanceOf(GraphReadOnlyError);
        expect(error).toMatchObject({ clause, kind: 'failed-precondition' });
      }
      await expect(readOnly.writeTransaction(() => Promise.resolve())).rejects.toBeInstanceOf(GraphReadOnlyError);
      expect(await count('Person')).toBe(before);
    });
  });
}
