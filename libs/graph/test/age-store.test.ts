import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GraphQueryError, GraphReadOnlyError, GraphStoreClosedError, isTransientGraphError, openGraphStore, type GraphStore } from '../src/index.js';
import { describeGraphStoreContract } from './graph-contract.js';
import { ageResource, closedPort, startTestGraph } from './harness.js';

let graph: Awaited<ReturnType<typeof startTestGraph>>;
beforeAll(async () => {
  graph = await startTestGraph();
});
afterAll(async () => {
  await graph?.close();
});

describeGraphStoreContract('GraphStore contract on embedded PGlite + AGE', () => ({
  prefix: 'C',
  open: ({ readOnly }) => openGraphStore(ageResource(graph.server, { graph: 'contract', read_only: readOnly })),
}));

describe('AGE adapter', () => {
  let store: GraphStore;
  beforeAll(() => {
    store = openGraphStore(ageResource(graph.server, { graph: 'specifics' }));
  });
  afterAll(async () => {
    await store?.close();
  });

  it('returns agtype values as plain JSON values, integers beyond 2^53 as text', async () => {
    const [row] = await store.run(
      `RETURN 9007199254740993 AS big, -12 AS small, 2.5 AS float, 'it\\'s "quoted"' AS text, [1, {a: 'x', b: [true, null]}] AS list, null AS nothing`,
    );
    expect(row).toEqual({ big: '9007199254740993', small: -12, float: 2.5, text: 'it\'s "quoted"', list: [1, { a: 'x', b: [true, null] }], nothing: null });
    // parameters travel as one agtype map and come back with their types
    expect(await store.run('RETURN $value AS value', { value: { n: 3, f: 0.25, s: 'ä€', l: ['a', 1], nested: { ok: true } } })).toEqual([
      { value: { n: 3, f: 0.25, s: 'ä€', l: ['a', 1], nested: { ok: true } } },
    ]);
  });

  it('ensurePropertyIndexes makes an index that equality lookups use, for a label not created yet, idempotently', async () => {
    const indexed = openGraphStore(ageResource(graph.server, { graph: 'indexed' }));
    try {
      await indexed.ensurePropertyIndexes([{ label: 'Token', property: 'id' }]);
      await indexed.ensurePropertyIndexes([{ label: 'Token', property: 'id' }]);
      await indexed.run('UNWIND range(1, 2000) AS i CREATE (:Token {id: i, text: toString(i)})');
      expect(await indexed.run('UNWIND [7, 1999] AS wanted MATCH (t:Token) WHERE t.id = wanted RETURN t.text AS text')).toEqual([
        { text: '7' },
        { text: '1999' },
      ]);
      const { Client } = (await import('pg')).default;
      const client = new Client({ host: graph.server.host, port: graph.server.port, user: 'postgres', database: 'postgres' });
      await client.connect();
      try {
        const { rows } = await client.query<{ indexname: string }>(
          "SELECT indexname FROM pg_catalog.pg_indexes WHERE schemaname = 'indexed' AND tablename = 'Token'",
        );
        expect(rows.map((row) => row.indexname)).toContain('Token_id_loom_idx');
      } finally {
        await client.end();
      }
      await expect(indexed.ensurePropertyIndexes([{ label: 'Bad label', property: 'id' }])).rejects.toMatchObject({
        violations: [{ field: 'indexes[0].label' }],
      });
    } finally {
      await indexed.close();
    }
    const readOnly = openGraphStore(ageResource(graph.server, { graph: 'indexed', read_only: true }));
    await expect(readOnly.ensurePropertyIndexes([{ label: 'Token', property: 'id' }])).rejects.toBeInstanceOf(GraphReadOnlyError);
    await readOnly.close();
  });

  it('a MERGE on an indexed node key looks the node up through the index, not by reading the whole label', async () => {
    await store.ensurePropertyIndexes([
      { label: 'Keyword', property: 'value' },
      { label: 'Entity', properties: ['label', 'value'] },
    ]);
    // the plan rows are text, not agtype values, so they are read with a client of its own: PGlite has one session, which the store's
    // connection has prepared (search_path, age.enable_containment off)
    const { Client } = (await import('pg')).default;
    const client = new Client({ host: graph.server.host, port: graph.server.port, user: 'postgres', database: 'postgres' });
    await client.connect();
    const plan = async (cypher: string): Promise<string> => {
      const sql = `SELECT * FROM ag_catalog.cypher('specifics', $$ EXPLAIN ${cypher} $$, $1) AS (plan ag_catalog.agtype)`;
      const values = [JSON.stringify({ row: { value: 'NASA', label: 'ORG' } })];
      const { rows } = await client.query<[string]>({ text: sql, values, rowMode: 'array' });
      return rows.map((row) => row[0]).join('\n');
    };
    try {
      // an index scan or a bitmap index scan on the key's index, and no sequential scan of the label
      expect(await plan('MERGE (k:Keyword {value: $row.value})')).toMatch(/Index Scan (using|on) "Keyword_value_loom_idx"/);
      expect(await plan('MERGE (k:Keyword {value: $row.value})')).not.toContain('Seq Scan');
      expect(await plan('MERGE (e:Entity {label: $row.label, value: $row.value})')).toMatch(/Index Scan (using|on) "Entity\(label,value\)_loom_idx"/);
    } finally {
      await client.end();
    }
  });

  it('lookupRowsByKey: a batch MERGE on an ANALYZEd label finds its rows through the key index instead of reading the whole label', async () => {
    await store.ensurePropertyIndexes([{ label: 'Paper', property: 'id' }]);
    await store.run("UNWIND range(1, 200) AS i CREATE (:Paper {id: 'p' + toString(i)})");
    const { Client } = (await import('pg')).default;
    const client = new Client({ host: graph.server.host, port: graph.server.port, user: 'postgres', database: 'postgres' });
    await client.connect();
    // the table's scans as PostgreSQL counts them (flushed to the statistics at once rather than at the session's end)
    const scans = async (): Promise<{ seq: number; index: number }> => {
      await client.query('SELECT pg_catalog.pg_stat_force_next_flush()');
      const { rows } = await client.query<{ seq: string; index: string }>(
        "SELECT seq_scan AS seq, idx_scan AS index FROM pg_catalog.pg_stat_user_tables WHERE schemaname = 'specifics' AND relname = 'Paper'",
      );
      return { seq: Number(rows[0]?.seq), index: Number(rows[0]?.index) };
    };
    const batch = { batch: ['p1', 'p2', 'p3', 'new'].map((id) => ({ id })) };
    // the RETURN keeps the statement in Cypher (a MERGE with at most SETs from the row is written as rows: below)
    const merge = 'UNWIND $batch AS row MERGE (p:Paper {id: row.id}) RETURN p.id AS id';
    try {
      await client.query('ANALYZE specifics."Paper"'); // as autovacuum would on a server
      const before = await scans();
      await store.run(merge, batch); // AGE's own plan: a hash join over the whole label
      const plain = await scans();
      expect(plain.seq).toBe(before.seq + 1);
      await store.run(merge, batch, { lookupRowsByKey: true });
      const keyed = await scans();
      expect(keyed).toEqual({ seq: plain.seq, index: plain.index + 4 });
      // the joins are off for that statement's transaction only: the session PGlite shares with every connection keeps them
      const { rows } = await client.query<{ hash: string; merge: string }>(
        "SELECT current_setting('enable_hashjoin') AS hash, current_setting('enable_mergejoin') AS merge",
      );
      expect(rows).toEqual([{ hash: 'on', merge: 'on' }]);
    } finally {
      await client.end();
    }
    expect(await store.run('MATCH (p:Paper) RETURN count(p) AS papers')).toEqual([{ papers: 201 }]);
  });

  it("a batch MERGE by key with SETs (lookupRowsByKey) leaves the same nodes and properties as AGE's own MERGE, and finds its keys through the index", async () => {
    await store.ensurePropertyIndexes([
      { label: 'MergedRows', property: 'id' },
      { label: 'MergedCypher', property: 'id' },
      { label: 'PairRows', properties: ['label', 'value'] },
      { label: 'PairCypher', properties: ['label', 'value'] },
    ]);
    const merge = (label: string) => `UNWIND $batch AS row MERGE (m:${label} {id: row.id}) SET m.name = row.name SET m.n = row.n, m.tags = row.tags;`;
    const pair = (label: string) => `UNWIND $batch AS row MERGE (e:${label} {label: row.label, value: row.value}) SET e.seen = row.seen`;
    const batches = [
      // a key twice (the later SET wins), a number and a string of the same digits (two nodes), a null SET (no property)
      [
        { id: 'a', name: 'A', n: 1 },
        { id: 1, name: 'one', n: 2.5 },
        { id: '1', name: 'string one', tags: ['x', 'y'] },
        { id: 'a', name: 'A again' },
        { id: 'b', name: null, n: true },
      ],
      // stored keys: a SET to null removes the property, a missing field too; new keys beside them
      [{ id: 'a', name: null, n: 3 }, { id: 'b', name: 'B' }, { id: 'c', name: 'it\'s "c" \\ ä€', n: -7 }, { id: 1 }],
    ];
    for (const batch of batches) {
      expect(await store.run(merge('MergedRows'), { batch }, { lookupRowsByKey: true })).toEqual([]);
      expect(await store.run(merge('MergedCypher'), { batch })).toEqual([]);
    }
    const pairs = [
      { label: 'ORG', value: 'NASA', seen: 1 },
      { label: 'LOC', value: 'NASA', seen: 2 },
      { label: 'ORG', value: 'NASA', seen: 3 },
    ];
    await store.run(pair('PairRows'), { batch: pairs }, { lookupRowsByKey: true });
    await store.run(pair('PairCypher'), { batch: pairs });
    const nodes = async (label: string) => (await store.run(`MATCH (m:${label}) RETURN properties(m) AS p`)).map((row) => JSON.stringify(row['p'])).sort();
    expect(await nodes('MergedRows')).toEqual(await nodes('MergedCypher'));
    expect(await nodes('MergedRows')).toHaveLength(5);
    // a key a statement's earlier row created gets the later row's SET, as Cypher says and Neo4j does; AGE's own MERGE
    // loses that SET (seen stays 1)
    expect(await nodes('PairRows')).toEqual([
      JSON.stringify({ seen: 2, label: 'LOC', value: 'NASA' }),
      JSON.stringify({ seen: 3, label: 'ORG', value: 'NASA' }),
    ]);
    expect(await nodes('PairCypher')).toContain(JSON.stringify({ seen: 1, label: 'ORG', value: 'NASA' }));

    // on an ANALYZEd label of some size, the keys are looked up through the index, never by reading the whole label
    await store.run("UNWIND range(1, 300) AS i CREATE (:MergedRows {id: 'bulk' + toString(i)})");
    const { Client } = (await import('pg')).default;
    const client = new Client({ host: graph.server.host, port: graph.server.port, user: 'postgres', database: 'postgres' });
    await client.connect();
    const scans = async (): Promise<{ seq: number; index: number }> => {
      await client.query('SELECT pg_catalog.pg_stat_force_next_flush()');
      const { rows } = await client.query<{ seq: string; index: string }>(
        "SELECT seq_scan AS seq, idx_scan AS index FROM pg_catalog.pg_stat_user_tables WHERE schemaname = 'specifics' AND relname = 'MergedRows'",
      );
      return { seq: Number(rows[0]?.seq), index: Number(rows[0]?.index) };
    };
    try {
      await client.query('ANALYZE specifics."MergedRows"');
      const before = await scans();
      const batch = ['bulk1', 'bulk2', 'bulk3', 'fresh'].map((id) => ({ id, name: id }));
      await store.run(merge('MergedRows'), { batch }, { lookupRowsByKey: true });
      const after = await scans();
      expect(after.seq).toBe(before.seq);
      expect(after.index).toBeGreaterThanOrEqual(before.index + 4);
    } finally {
      await client.end();
    }
    expect(await store.run("MATCH (m:MergedRows) WHERE m.id IN ['bulk1', 'fresh'] RETURN m.name AS name ORDER BY name")).toEqual([
      { name: 'bulk1' },
      { name: 'fresh' },
    ]);
  });

  it('createInBulk finds ends among several batches of a label, by key or another property, and stored nodes, in one statement', async () => {
    await store.writeTransaction((tx) => tx.createInBulk({ nodes: [{ label: 'BulkPerson', nodes: [{ id: 'p1', name: 'Ann' }] }] }));
    const byName = { from: { label: 'BulkPerson', property: 'name' }, to: { label: 'BulkCity', property: 'name' } };
    const byId = { from: { label: 'BulkPerson', property: 'id' }, to: { label: 'BulkPerson', property: 'id' } };
    await store.writeTransaction((tx) =>
      tx.createInBulk({
        nodes: [
          // p1 is stored: its row here creates nothing, and its name here names no node
          {
            label: 'BulkPerson',
            skipExisting: 'id',
            nodes: [
              { id: 'p1', name: 'Annie' },
              { id: 'p2', name: 'Bob' },
            ],
          },
          { label: 'BulkPerson', nodes: [{ id: 'p3', name: 'Cy' }] },
          { label: 'BulkCity', nodes: [{ name: 'Oslo' }] },
        ],
        relationships: [
          { type: 'LIVES_IN', ...byName, relationships: ['Ann', 'Annie', 'Bob', 'Cy'].map((name) => ({ from: name, to: 'Oslo' })) },
          {
            type: 'KNOWS',
            ...byId,
            relationships: [
              { from: 'p1', to: 'p3' },
              { from: 'p2', to: 'p1' },
            ],
          },
        ],
      }),
    );
    const pairs = (type: string, property: string) =>
      store.run(`MATCH (a)-[:${type}]->(b) RETURN a.${property} AS a, b.${property} AS b ORDER BY a`, {}, { columns: ['a', 'b'] });
    expect(await pairs('LIVES_IN', 'name')).toEqual(['Ann', 'Bob', 'Cy'].map((name) => ({ a: name, b: 'Oslo' })));
    expect(await pairs('KNOWS', 'id')).toEqual([
      { a: 'p1', b: 'p3' },
      { a: 'p2', b: 'p1' },
    ]);
  });

  it('refuses Cypher containing $$ clearly, before sending it', async () => {
    const error = await store.run("RETURN 'price: $$5' AS text").catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(GraphQueryError);
    expect((error as Error).message).toContain("contains '$$'");
    expect((error as Error).message).toContain('as a parameter');
    expect(isTransientGraphError(error)).toBe(false);
    // the same text as a parameter is fine
    expect(await store.run('RETURN $text AS text', { text: 'price: $$5' })).toEqual([{ text: 'price: $$5' }]);
  });

  it('asks for columns when a RETURN item has no simple name, and uses declared columns', async () => {
    await store.run('CREATE (:Greeter {name: $name})', { name: 'Ann' });
    const error = await store.run("MATCH (g:Greeter) RETURN 'hello ' + g.name").catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(GraphQueryError);
    expect((error as Error).message).toContain("the RETURN item ''hello ' + g.name' has no simple name");
    expect((error as Error).message).toContain('options.columns');

    expect(await store.run("MATCH (g:Greeter) RETURN 'hello ' + g.name", {}, { columns: ['greeting'] })).toEqual([{ greeting: 'hello Ann' }]);
    // bare identifiers, property paths, DISTINCT and aliases need nothing declared
    expect(await store.run('MATCH (g:Greeter) RETURN DISTINCT g.name, count(*) AS c ORDER BY g.name LIMIT 5')).toEqual([{ 'g.name': 'Ann', c: 1 }]);
    const wrongCount = await store.run('MATCH (g:Greeter) RETURN g, g.name', {}, { columns: ['only_one'] }).catch((caught: unknown) => caught);
    expect((wrongCount as Error).message).toContain('declare options.columns');
  });

  it('MERGE of a relationship between matched nodes creates nothing on AGE; WHERE NOT exists(...) CREATE does', async () => {
    await store.run("CREATE (:Doc {id: 'a'}), (:Doc {id: 'b'})");
    const link = 'MATCH (a:Doc {id: $a}), (b:Doc {id: $b}) MERGE (a)-[:CITES]->(b)';
    await store.run(link, { a: 'a', b: 'b' });
    expect(await store.run('MATCH (:Doc)-[r:CITES]->(:Doc) RETURN count(r) AS c')).toEqual([{ c: 0 }]); // the AGE difference the README names

    const portable = 'MATCH (a:Doc {id: $a}), (b:Doc {id: $b}) WHERE NOT exists((a)-[:CITES]->(b)) CREATE (a)-[:CITES]->(b)';
    await store.run(portable, { a: 'a', b: 'b' });
    await store.run(portable, { a: 'a', b: 'b' });
    expect(await store.run('MATCH (:Doc)-[r:CITES]->(:Doc) RETURN count(r) AS c')).toEqual([{ c: 1 }]);
  });

  it('a MATCH after a CREATE in one statement neither sees the new nodes on AGE nor, finding nothing, keeps them (Neo4j does both)', async () => {
    await store.run(
      "UNWIND ['s1', 's2'] AS s CREATE (:Seen {id: s}) WITH count(*) AS created MATCH (a:Seen {id: 's1'}), (b:Seen {id: 's2'}) CREATE (a)-[:NEXT]->(b)",
    );
    // the AGE difference the README names: the MATCH found no :Seen node, so no row ever reached the CREATE before it
    expect(await store.run('MATCH (n:Seen) RETURN count(n) AS c')).toEqual([{ c: 0 }]);
    await store.run("UNWIND ['s1', 's2'] AS s CREATE (:Seen {id: s})");
    await store.run("MATCH (a:Seen {id: 's1'}), (b:Seen {id: 's2'}) CREATE (a)-[:NEXT]->(b)");
    expect(await store.run('MATCH (:Seen)-[r:NEXT]->(:Seen) RETURN count(r) AS c')).toEqual([{ c: 1 }]);
  });

  it('a read_only resource refuses CREATE without connecting at all', async () => {
    // nothing listens on this port: reaching the server would be a GraphUnavailableError
    const offline = openGraphStore(ageResource({ host: '127.0.0.1', port: await closedPort() }, { graph: 'specifics', read_only: true }));
    try {
      const error = await offline.run("CREATE (:Intruder {name: 'x'}) RETURN 1 AS one").catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(GraphReadOnlyError);
      expect(error).toMatchObject({ clause: 'CREATE', store: 'age' });
      expect((error as Error).message).toContain('before sending it');
    } finally {
      await offline.close();
    }
    expect(await store.run('MATCH (n:Intruder) RETURN count(n) AS c')).toEqual([{ c: 0 }]);
  });

  it('a read_only resource does not create its graph', async () => {
    const missing = openGraphStore(ageResource(graph.server, { graph: 'never_created', read_only: true }));
    try {
      const error = await missing.run('MATCH (n) RETURN n').catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(GraphQueryError);
      expect((error as Error).message).toContain("graph 'never_created' does not exist");
    } finally {
      await missing.close();
    }
  });

  it('a transaction in which a caught statement failed is not reported as committed', async () => {
    const error = await store
      .writeTransaction(async (tx) => {
        await tx.run("CREATE (:Careless {name: 'kept?'})");
        await tx.run('MATCH (n RETURN n').catch(() => undefined); // the caller swallows the failure
      })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(GraphQueryError);
    expect((error as Error).message).toContain('rolled back');
    expect(await store.run('MATCH (n:Careless) RETURN count(n) AS c')).toEqual([{ c: 0 }]);
  });

  it('an aborted signal rejects with its reason and leaves the store usable', async () => {
    const controller = new AbortController();
    const reason = new Error('stopped by the caller');
    controller.abort(reason);
    await expect(store.run('RETURN 1 AS one', {}, { signal: controller.signal })).rejects.toBe(reason);
    expect(await store.run('RETURN 1 AS one')).toEqual([{ one: 1 }]);
  });

  it('a closed store says so', async () => {
    const closing = openGraphStore(ageResource(graph.server, { graph: 'specifics' }));
    await closing.close();
    await expect(closing.run('RETURN 1 AS one')).rejects.toBeInstanceOf(GraphStoreClosedError);
  });
});

describe('AGE adapter: a trailing relationship CREATE written as rows (insertTrailingRelationship)', () => {
  const keywords =
    'UNWIND $batch AS row MERGE (d:Document {id: row.id}) SET d.title = row.title ' +
    'WITH d, row UNWIND row.keywords AS keyword MERGE (k:Keyword {value: keyword.value}) ' +
    'WITH DISTINCT d, k, keyword WHERE NOT exists((d)-[:HAS_KEYWORD]->(k)) CREATE (d)-[:HAS_KEYWORD {relevance: keyword.relevance, rank: keyword.rank}]->(k)';
  const tagged = 'MATCH (d:Document {id: $id}), (k:Keyword {value: $value}) CREATE (k)<-[:TAGGED {by: $by, note: null}]-(d)';
  // a CREATE that makes a node is left to AGE
  const cites = 'MATCH (d:Document {id: $id}) CREATE (d)-[:CITES {page: 1}]->(:Source {name: $name})';
  const rows = [
    {
      id: 'd1',
      title: 'One',
      keywords: [
        { value: 'graph', relevance: 0.9, rank: 1 },
        { value: 'age', relevance: null, rank: 2 },
      ],
    },
    { id: 'd2', title: 'Two', keywords: [{ value: 'graph', relevance: 0.4, rank: 1 }] },
  ];

  /** Writes the same statements into `graphName`, with or without the option, and returns the graph's nodes and relationships. */
  async function writeAndDump(graphName: string, asRows: boolean): Promise<string[]> {
    const store = openGraphStore(ageResource(graph.server, { graph: graphName }));
    try {
      const options = { insertTrailingRelationship: asRows };
      await store.ensurePropertyIndexes([
        { label: 'Document', property: 'id' },
        { label: 'Keyword', property: 'value' },
      ]);
      await store.run(keywords, { batch: rows }, options);
      await store.run(keywords, { batch: [rows[1], { ...rows[0], keywords: [{ value: 'pglite', relevance: 1, rank: 3 }] }] }, options); // re-delivered
      await store.run(tagged, { id: 'd2', value: 'age', by: 'hand' }, options);
      await store.run(cites, { id: 'd1', name: 'paper' }, options);
      const nodes = await store.run('MATCH (n) RETURN label(n) AS label, properties(n) AS properties');
      const relationships = await store.run('MATCH (a)-[r]->(b) RETURN type(r) AS type, properties(a) AS a, properties(r) AS properties, properties(b) AS b');
      return [...nodes, ...relationships].map((record) => JSON.stringify(record)).sort();
    } finally {
      await store.close();
    }
  }

  it('writes the same graph as AGE own CREATE: nulls left out, either direction, a new type, a re-delivered batch adds nothing', async () => {
    const asWritten = await writeAndDump('as_written', false);
    expect(await writeAndDump('as_rows', true)).toEqual(asWritten);
    expect(asWritten.filter((entry) => entry.includes('"HAS_KEYWORD"'))).toHaveLength(4);
    expect(asWritten).toContain(JSON.stringify({ type: 'HAS_KEYWORD', a: { id: 'd1', title: 'One' }, properties: { rank: 2 }, b: { value: 'age' } }));
    expect(asWritten).toContain(JSON.stringify({ type: 'TAGGED', a: { id: 'd2', title: 'Two' }, properties: { by: 'hand' }, b: { value: 'age' } }));
    expect(asWritten).toContain(JSON.stringify({ type: 'CITES', a: { id: 'd1', title: 'One' }, properties: { page: 1 }, b: { name: 'paper' } }));
  });

  it("does not read the end node's label table for each relationship, as AGE's CREATE does", async () => {
    const store = openGraphStore(ageResource(graph.server, { graph: 'scanned' }));
    const { Client } = (await import('pg')).default;
    const client = new Client({ host: graph.server.host, port: graph.server.port, user: 'postgres', database: 'postgres' });
    await client.connect();
    // the Keyword table's whole-table reads as PostgreSQL counts them (the Document table is also read by AGE's SET,
    // which finds the node's row that way, with or without the option)
    const keywordScans = async (): Promise<number> => {
      await client.query('SELECT pg_catalog.pg_stat_force_next_flush()');
      const { rows: tables } = await client.query<{ seq: string }>(
        "SELECT seq_scan AS seq FROM pg_catalog.pg_stat_user_tables WHERE schemaname = 'scanned' AND relname = 'Keyword'",
      );
      return Number(tables[0]?.seq);
    };
    const batch = (prefix: string) => ({ batch: Array.from({ length: 5 }, (_, i) => ({ id: `${prefix}${i}`, title: '', keywords: [{ value: `k${i}` }] })) });
    try {
      await store.ensurePropertyIndexes([
        { label: 'Document', property: 'id' },
        { label: 'Keyword', property: 'value' },
      ]);
      await store.run(keywords, batch('warm'), { lookupRowsByKey: true });
      const before = await keywordScans();
      await store.run(keywords, batch('written'), { lookupRowsByKey: true });
      const written = await keywordScans();
      await store.run(keywords, batch('rows'), { lookupRowsByKey: true, insertTrailingRelationship: true });
      expect(written - before).toBe(5); // once for each of 5 relationships
      expect(await keywordScans()).toBe(written);
    } finally {
      await client.end();
      await store.close();
    }
    const check = openGraphStore(ageResource(graph.server, { graph: 'scanned' }));
    expect(await check.run('MATCH (:Document)-[r:HAS_KEYWORD]->(:Keyword) RETURN count(r) AS c')).toEqual([{ c: 15 }]);
    await check.close();
  });
});
