import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  GraphQueryError,
  GraphReadOnlyError,
  GraphTimeoutError,
  isTransientGraphError,
  toBatchQuery,
  type GraphNode,
  type GraphRelationship,
  type GraphStore,
} from '../src/index.js';

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
      for (const label of ['Person', 'Tag', 'Item', 'Row', 'Order', 'Greeter', 'Doc', 'Token', 'Entity', 'Sentence', 'BulkDoc', 'BulkTag'])
        await store?.run(`MATCH (n:${L(label)}) DETACH DELETE n`);
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

    it('createInBulk creates nodes, shared nodes once, and relationships between nodes found by key, in its transaction', async () => {
      const has = { type: L('HAS'), from: { label: L('BulkDoc'), property: 'id' }, to: { label: L('BulkTag'), property: 'id' } };
      await store.writeTransaction((tx) =>
        tx.createInBulk({
          nodes: [
            { label: L('BulkDoc'), nodes: [{ id: 'd1', title: 'it\'s "one"', pages: 3, draft: false, missing: null }] },
            { label: L('BulkTag'), skipExisting: 'id', nodes: [{ id: 't1', value: 'first' }, { id: 't1', value: 'second' }, { id: 't2' }] },
          ],
          relationships: [
            // a relationship whose node is not found, or whose label has no nodes at all, is not created
            {
              ...has,
              relationships: [
                { from: 'd1', to: 't1', properties: { weight: 2, none: null } },
                { from: 'd1', to: 'nowhere' },
              ],
            },
            { ...has, type: L('NEVER'), to: { label: L('Absent'), property: 'id' }, relationships: [{ from: 'd1', to: 'x' }] },
          ],
        }),
      );
      // a shared node already stored is left as it is; a bulk write that fails leaves nothing behind
      await store.writeTransaction((tx) =>
        tx.createInBulk({ nodes: [{ label: L('BulkTag'), skipExisting: 'id', nodes: [{ id: 't1', value: 'again' }, { id: 't3' }] }] }),
      );
      const failure = new RangeError('after the bulk write');
      await expect(
        store.writeTransaction(async (tx) => {
          await tx.createInBulk({
            nodes: [{ label: L('BulkTag'), nodes: [{ id: 't4' }] }],
            relationships: [{ ...has, type: L('ROLLED'), relationships: [{ from: 'd1', to: 't4' }] }],
          });
          throw failure;
        }),
      ).rejects.toBe(failure);

      const tags = await store.run(`MATCH (t:${L('BulkTag')}) RETURN t.id AS id, t.value AS value ORDER BY id`);
      expect(tags).toEqual([
        { id: 't1', value: 'first' },
        { id: 't2', value: null },
        { id: 't3', value: null },
      ]);
      const [row] = await store.run(
        `MATCH (d:${L('BulkDoc')})-[r]->(t) RETURN properties(d) AS doc, type(r) AS type, properties(r) AS r, t.id AS tag`,
        {},
        { columns: ['doc', 'type', 'r', 'tag'] },
      );
      expect(row).toEqual({ doc: { id: 'd1', title: 'it\'s "one"', pages: 3, draft: false }, type: L('HAS'), r: { weight: 2 }, tag: 't1' });
      expect(await store.run(`MATCH (:${L('BulkDoc')})-[r]->() RETURN count(r) AS c`)).toEqual([{ c: 1 }]);

      // the type rolled back with its transaction can be written again
      await store.writeTransaction((tx) => tx.createInBulk({ relationships: [{ ...has, type: L('ROLLED'), relationships: [{ from: 'd1', to: 't3' }] }] }));
      expect(await store.run(`MATCH (:${L('BulkDoc')})-[r:${L('ROLLED')}]->(t) RETURN t.id AS tag`)).toEqual([{ tag: 't3' }]);
    });

    it('createInBulk refuses a label, type or key that is not an identifier, naming it, before writing anything', async () => {
      const error = await store
        .writeTransaction((tx) =>
          tx.createInBulk({
            nodes: [
              { label: L('BulkDoc'), nodes: [{ id: 'ok' }] },
              { label: 'Bad label', nodes: [{ id: 'x' }] },
            ],
          }),
        )
        .catch((caught: unknown) => caught);
      expect((error as Error).message).toMatch(/nodes\[1\]\.label/);
      const key = await store
        .writeTransaction((tx) => tx.createInBulk({ nodes: [{ label: L('BulkTag'), skipExisting: 'id', nodes: [{ value: 'no id' }] }] }))
        .catch((caught: unknown) => caught);
      expect((key as Error).message).toMatch(/nodes\[0\]\.nodes\[0\]\.id/);
      expect(await store.run(`MATCH (d:${L('BulkDoc')} {id: 'ok'}) RETURN count(d) AS c`)).toEqual([{ c: 0 }]);
    });

    it('a syntax error is a GraphQueryError with the store message, not transient', async () => {
      const error = await store.run(`MATCH (n:${L('Person')} RETURN n`).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(GraphQueryError);
      expect(error).toMatchObject({ kind: 'failed-precondition', store: store.kind });
      expect((error as Error).message).toMatch(/syntax|invalid input/i);
      // one line on both stores (Neo4j's repeats the query and a caret below its first line)
      expect((error as Error).message).not.toContain('\n');
      expect(isTransientGraphError(error)).toBe(false);
    });

    it('returns literals and parameters as the same plain values: integers beyond 2^53 as text, floats, nested maps and lists', async () => {
      const [row] = await store.run(
        `RETURN 9007199254740993 AS big, -12 AS small, 2.5 AS float, 'it\\'s "quoted"' AS text, [1, {a: 'x', b: [true, 2.0]}] AS list, null AS nothing`,
      );
      expect(row).toEqual({ big: '9007199254740993', small: -12, float: 2.5, text: 'it\'s "quoted"', list: [1, { a: 'x', b: [true, 2] }], nothing: null });
      const value = { n: 3, f: 0.25, s: 'ä€', l: ['a', 1], nested: { ok: true } };
      expect(await store.run('RETURN $value AS value, $value.n + 1 AS next', { value })).toEqual([{ value, next: 4 }]);
    });

    it('declared columns name the values in order, whatever the RETURN items look like', async () => {
      await store.run(`CREATE (:${L('Greeter')} {name: $name})`, { name: 'Ann' });
      const query = `MATCH (g:${L('Greeter')}) RETURN 'hello ' + g.name, count(*)`;
      expect(await store.run(query, {}, { columns: ['greeting', 'c'] })).toEqual([{ greeting: 'hello Ann', c: 1 }]);
      const streamed: unknown[] = [];
      for await (const record of store.stream(query, {}, { columns: ['greeting', 'c'] })) streamed.push(record);
      expect(streamed).toEqual([{ greeting: 'hello Ann', c: 1 }]);
      expect(await store.writeTransaction((tx) => tx.run(query, {}, { columns: ['greeting', 'c'] }))).toEqual([{ greeting: 'hello Ann', c: 1 }]);
      // simple items need nothing declared, and are named as written
      expect(await store.run(`MATCH (g:${L('Greeter')}) RETURN DISTINCT g.name, count(*) AS c ORDER BY g.name LIMIT 5`)).toEqual([{ 'g.name': 'Ann', c: 1 }]);

      const wrongCount = await store.run(query, {}, { columns: ['only_one'] }).catch((caught: unknown) => caught);
      expect(wrongCount).toBeInstanceOf(GraphQueryError);
      expect((wrongCount as Error).message).toContain('options.columns');
    });

    it('creates a relationship once with WHERE NOT exists { MATCH ... } CREATE, the MERGE that works on both', async () => {
      await store.run(`CREATE (:${L('Doc')} {id: 'a'}), (:${L('Doc')} {id: 'b'})`);
      const link =
        `MATCH (a:${L('Doc')}), (b:${L('Doc')}) WHERE a.id = $a AND b.id = $b ` +
        `AND NOT exists { MATCH (a)-[x:${L('CITES')}]->(b) WHERE x.rule = $rule } CREATE (a)-[:${L('CITES')} {rule: $rule}]->(b)`;
      await store.run(link, { a: 'a', b: 'b', rule: 'r1' });
      await store.run(link, { a: 'a', b: 'b', rule: 'r1' });
      await store.run(link, { a: 'a', b: 'b', rule: 'r2' });
      const rules = await store.run(`MATCH (:${L('Doc')})-[r:${L('CITES')}]->(:${L('Doc')}) RETURN r.rule AS rule ORDER BY r.rule`);
      expect(rules).toEqual([{ rule: 'r1' }, { rule: 'r2' }]);
    });

    it("runs loom's statement shapes: create-if-missing with OPTIONAL MATCH, UNWINDs chained by WITH count(*), a batch from toBatchQuery", async () => {
      const createMissing =
        `UNWIND $entities AS e OPTIONAL MATCH (x:${L('Entity')}) WHERE x.id = e.id ` +
        `WITH e, x WHERE x IS NULL CREATE (:${L('Entity')} {id: e.id, name: e.name})`;
      await store.run(createMissing, { entities: [{ id: 1, name: 'one' }] });
      await store.run(createMissing, {
        entities: [
          { id: 1, name: 'one' },
          { id: 2, name: 'two' },
        ],
      });
      expect(await store.run(`MATCH (x:${L('Entity')}) RETURN x.id AS id, x.name AS name ORDER BY x.id`)).toEqual([
        { id: 1, name: 'one' },
        { id: 2, name: 'two' },
      ]);

      // a MATCH after a CREATE in one statement does not see the created nodes on AGE: the nodes come first, alone
      await store.run(`UNWIND $sentences AS s CREATE (:${L('Sentence')} {id: s})`, { sentences: ['s1', 's2', 's3'] });
      await store.run(
        `UNWIND $firsts AS f MATCH (a:${L('Sentence')}), (b:${L('Sentence')}) WHERE a.id = f.from AND b.id = f.to CREATE (a)-[:${L('NEXT')}]->(b) ` +
          `WITH count(*) AS created UNWIND $nexts AS n MATCH (a:${L('Sentence')}), (b:${L('Sentence')}) WHERE a.id = n.from AND b.id = n.to ` +
          `CREATE (a)-[:${L('NEXT')}]->(b)`,
        { firsts: [{ from: 's1', to: 's2' }], nexts: [{ from: 's2', to: 's3' }] },
      );
      const chain = await store.run(`MATCH (a:${L('Sentence')})-[:${L('NEXT')}]->(b) RETURN a.id AS a, b.id AS b ORDER BY a.id`);
      expect(chain).toEqual([
        { a: 's1', b: 's2' },
        { a: 's2', b: 's3' },
      ]);

      const batch = toBatchQuery(`CREATE (:${L('Row')} {id: $id, label: $label})`, 'batch', 'row');
      await store.run(batch, {
        batch: [
          { id: 10, label: 'ten' },
          { id: 11, label: "it's" },
        ],
      });
      expect(await store.run(`MATCH (r:${L('Row')}) WHERE r.id >= 10 RETURN r.label AS label ORDER BY r.id`)).toEqual([{ label: 'ten' }, { label: "it's" }]);
    });

    it('ensurePropertyIndexes is idempotent, also for a label with no nodes yet, and lookups by the property find the nodes', async () => {
      const indexes = [{ label: L('Token'), property: 'id' }];
      await store.ensurePropertyIndexes(indexes);
      await store.ensurePropertyIndexes(indexes);
      await store.run(`UNWIND range(1, 300) AS i CREATE (:${L('Token')} {id: i, text: toString(i)})`);
      expect(await store.run(`UNWIND [7, 299] AS wanted MATCH (t:${L('Token')}) WHERE t.id = wanted RETURN t.text AS text`)).toEqual([
        { text: '7' },
        { text: '299' },
      ]);
    });

    it('a node key of two properties gets one index, idempotently, and a MERGE on both finds the stored node', async () => {
      const keys = [{ label: L('Mention'), properties: ['kind', 'value'] }];
      await store.ensurePropertyIndexes(keys);
      await store.ensurePropertyIndexes(keys);
      const merge = `UNWIND $rows AS row MERGE (m:${L('Mention')} {kind: row.kind, value: row.value}) RETURN count(m) AS merged`;
      await store.run(merge, {
        rows: [
          { kind: 'ORG', value: 'NASA' },
          { kind: 'ORG', value: 'ESA' },
          { kind: 'ORG', value: 'NASA' },
        ],
      });
      await store.run(merge, {
        rows: [
          { kind: 'ORG', value: 'NASA' },
          { kind: 'LOC', value: 'NASA' },
        ],
      });
      expect(await store.run(`MATCH (m:${L('Mention')}) RETURN m.kind AS kind, m.value AS value ORDER BY value, kind`)).toEqual([
        { kind: 'ORG', value: 'ESA' },
        { kind: 'LOC', value: 'NASA' },
        { kind: 'ORG', value: 'NASA' },
      ]);
      await expect(store.ensurePropertyIndexes([{ label: L('Mention'), properties: [] }])).rejects.toMatchObject({
        violations: [{ field: 'indexes[0].properties' }],
      });
    });

    it('an aborted signal rejects with its reason and leaves the store usable', async () => {
      const controller = new AbortController();
      const reason = new RangeError('the caller gave up');
      controller.abort(reason);
      await expect(store.run('RETURN 1 AS one', {}, { signal: controller.signal })).rejects.toBe(reason);
      expect(await store.run('RETURN 1 AS one')).toEqual([{ one: 1 }]);
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

    it('read answers at most maxRows records and says when there were more; whole numbers are integers (LIMIT $n)', async () => {
      await store.run(`UNWIND range(1, 4) AS i CREATE (:${L('Row')} {i: i, kind: 'read'})`);
      const query = `MATCH (n:${L('Row')}) WHERE n.kind = $kind RETURN n.i AS i ORDER BY i LIMIT $n`;
      // a JSON double that is whole, as google.protobuf.Struct gives every number
      expect(await store.read(query, { kind: 'read', n: 3.0 }, { maxRows: 2, timeoutMs: 30_000 })).toEqual({ records: [{ i: 1 }, { i: 2 }], truncated: true });
      expect(await store.read(query, { kind: 'read', n: 3 }, { maxRows: 3, timeoutMs: 30_000 })).toEqual({
        records: [{ i: 1 }, { i: 2 }, { i: 3 }],
        truncated: false,
      });
    });

    it('read keeps a write from writing by the store itself, on a writable resource too (the text is not parsed for it)', async () => {
      await store.run(`CREATE (:${L('Person')} {name: 'Read'})`); // something for SET and DELETE to change
      const before = await count('Person');
      for (const reader of [store, readOnly]) {
        for (const query of [
          `CREATE (:${L('Person')} {name: 'Eve'})`,
          `MATCH (n:${L('Person')}) SET n.age = 1`,
          `MATCH (n:${L('Person')}) DETACH DELETE n`,
          `MERGE (:${L('Person')} {name: 'Eve'})`,
        ]) {
          const error = await reader.read(query, {}, { maxRows: 10, timeoutMs: 30_000 }).catch((caught: unknown) => caught);
          expect(error, query).toBeInstanceOf(GraphReadOnlyError);
          // undefined: the store refused it, not loom's reading of the text
          expect(error, query).toMatchObject({ clause: undefined, kind: 'failed-precondition' });
        }
      }
      expect(await count('Person')).toBe(before);
      expect(await store.run(`MATCH (n:${L('Person')}) WHERE n.age = 1 RETURN count(n) AS c`)).toEqual([{ c: 0 }]);
    });

    it('read ends a query that runs past its time limit with GraphTimeoutError, and the store goes on answering', async () => {
      const long = 'UNWIND range(1, 1000) AS a UNWIND range(1, 1000) AS b RETURN count(*) AS c';
      const error = await store.read(long, {}, { maxRows: 1, timeoutMs: 1 }).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(GraphTimeoutError);
      expect(error).toMatchObject({ kind: 'deadline-exceeded', retryable: false });
      expect(await store.read('RETURN 1 AS one', {}, { maxRows: 1, timeoutMs: 60_000 })).toEqual({ records: [{ one: 1 }], truncated: false });
    });
  });
}
