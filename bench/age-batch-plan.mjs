#!/usr/bin/env node
// How AGE plans the graph writer's batched statements on a graph that has statistics (issue 38): the embedded graph
// (PGlite with AGE, behind its socket server) holding <documents> Documents with 5 keywords and 3 entities each,
// indexed as the graph writer indexes its MERGE keys, then ANALYZEd (as autovacuum does on a PostgreSQL server).
// Each round writes a batch of 50 new Documents with each statement, through the AGE store as the graph writer does:
// once as a plain statement and once with `lookupRowsByKey` (hash and merge joins off in its transaction), alternating.
// Prints the mean time of a batch and the plan's joins and scans of each. With --rows, both runs use lookupRowsByKey
// and the second also `insertTrailingRelationship` (the writers' relationship CREATE written as table rows, as the graph
// writer does), against AGE's own CREATE, which reads both end nodes' label tables for every relationship. Not part of
// `npm run bench`. Usage: node bench/age-batch-plan.mjs [documents in the graph, default 3000] [rounds, default 10] [--rows]
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RESOURCE_KINDS } from '@loom/domain';
import { mergeKeys, openGraphStore, startEmbeddedGraph, toBatchQuery } from '@loom/graph';
import pg from 'pg';
import { parse } from 'yaml';

const ROWS = process.argv.includes('--rows');
const [documents = 3000, rounds = 10] = process.argv
  .slice(2)
  .filter((arg) => arg !== '--rows')
  .map(Number);
/** The two ways each statement is run, alternating: [name, options]. */
const MODES = ROWS
  ? [
      ['CREATE', { lookupRowsByKey: true }],
      ['rows', { lookupRowsByKey: true, insertTrailingRelationship: true }],
    ]
  : [
      ['default', {}],
      ['lookupRowsByKey', { lookupRowsByKey: true }],
    ];
const BATCH = 50;
const KEYWORDS_A_DOCUMENT = 5;
const ENTITIES_A_DOCUMENT = 3;
const GRAPH = 'plan_graph';
const workflowFile = fileURLToPath(new URL('../examples/text-to-graph.workflow.yaml', import.meta.url));
const writers = parse(readFileSync(workflowFile, 'utf8')).components;
const statements = [
  ['MATCH Document', 'UNWIND $batch AS row MATCH (d:Document {id: row.id}) RETURN d.id'],
  ['MERGE Document', 'UNWIND $batch AS row MERGE (d:Document {id: row.id})'],
  ['Write keywords', writers['Write keywords'].options.query],
  ['Write entities', writers['Write entities'].options.query],
].map(([name, query]) => [name, query.startsWith('UNWIND') ? query : toBatchQuery(query, 'batch', 'row')]);

/** A document's row as the writers get it: its keywords and entities drawn from pools that documents share. */
function row(index) {
  const keywordPool = Math.max(100, documents);
  return {
    id: `doc-${index}`,
    title: `Document ${index}`,
    _keywords: Array.from({ length: KEYWORDS_A_DOCUMENT }, (_, k) => ({ value: `keyword ${(index * 7 + k * 13) % keywordPool}`, relevance: 0.5 })),
    _merged_entities: {
      ORG: Array.from({ length: ENTITIES_A_DOCUMENT }, (_, e) => ({ value: `entity ${(index * 5 + e * 11) % keywordPool}` })),
    },
  };
}

const dir = mkdtempSync(join(tmpdir(), 'loom-age-plan-'));
const server = await startEmbeddedGraph({ dataDir: join(dir, 'pgdata') });
const store = openGraphStore({
  resource: { qualifiedName: RESOURCE_KINDS.AGE_DATABASE },
  parameters: { host: server.host, port: server.port, user: 'postgres', password: '', graph: GRAPH },
});
// EXPLAIN's rows are text rather than agtype, so plans are read with a client of its own (PGlite has one session,
// which the store's connection prepared: search_path, age.enable_containment off)
const client = new pg.Client({ host: server.host, port: server.port, user: 'postgres', database: 'postgres' });
try {
  await store.ensurePropertyIndexes(statements.flatMap(([, query]) => mergeKeys(query)));
  const rows = Array.from({ length: documents }, (_, index) => row(index));
  await store.writeTransaction((tx) =>
    tx.createInBulk({
      nodes: [
        { label: 'Document', nodes: rows.map((doc) => ({ id: doc.id, title: doc.title })) },
        { label: 'Keyword', nodes: rows.flatMap((doc) => doc._keywords.map((keyword) => ({ value: keyword.value }))), skipExisting: 'value' },
        { label: 'Entity', nodes: rows.flatMap((doc) => doc._merged_entities.ORG.map((e) => ({ label: 'ORG', value: e.value }))), skipExisting: 'value' },
      ],
      relationships: [
        {
          type: 'HAS_KEYWORD',
          from: { label: 'Document', property: 'id' },
          to: { label: 'Keyword', property: 'value' },
          relationships: rows.flatMap((doc) => doc._keywords.map((keyword) => ({ from: doc.id, to: keyword.value, properties: { relevance: 0.5 } }))),
        },
        {
          type: 'MENTIONS',
          from: { label: 'Document', property: 'id' },
          to: { label: 'Entity', property: 'value' },
          relationships: rows.flatMap((doc) => doc._merged_entities.ORG.map((e) => ({ from: doc.id, to: e.value }))),
        },
      ],
    }),
  );
  await client.connect();
  await client.query(`ANALYZE`);
  await client.query(`LOAD 'age'; SET search_path = ag_catalog, "$user", public; SET age.enable_containment = off`);
  const plan = async (query, batch, keyed) => {
    const sql = `SELECT * FROM cypher('${GRAPH}', $$ EXPLAIN ${query} $$, $1) AS (plan agtype)`;
    await client.query(keyed ? 'BEGIN; SET LOCAL enable_hashjoin = off; SET LOCAL enable_mergejoin = off' : 'BEGIN');
    const { rows: lines } = await client.query({ text: sql, values: [JSON.stringify({ batch })], rowMode: 'array' });
    await client.query('ROLLBACK');
    const steps = lines.map((line) => String(line[0]).trim()).filter((line) => /Join|Loop|Scan|SubPlan/.test(line));
    return steps.map((step) => step.replace(/^->\s+/, '').replace(/\s+\(cost.*$/, '')).join(', ');
  };
  console.log(
    `${documents} Documents (${KEYWORDS_A_DOCUMENT} keywords and ${ENTITIES_A_DOCUMENT} entities each), ANALYZEd; batches of ${BATCH} new Documents, mean of ${rounds}`,
  );
  let next = documents;
  for (const [name, query] of statements) {
    const times = MODES.map(() => 0);
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? [0, 1] : [1, 0];
      for (const mode of order) {
        const batch = Array.from({ length: BATCH }, () => row(next++));
        const started = performance.now();
        await store.run(query, { batch }, { ...MODES[mode][1], columns: query.includes('RETURN') ? ['id'] : [] });
        times[mode] += performance.now() - started;
      }
    }
    const sample = Array.from({ length: BATCH }, (_, index) => row(index));
    for (const [mode, [label, options]] of MODES.entries()) {
      const pad = mode === 0 ? `${name}: ` : ' '.repeat(name.length + 2);
      const shown = ROWS ? '' : ` (${await plan(query, sample, options.lookupRowsByKey === true)})`;
      console.log(`${pad}${label} ${(times[mode] / rounds).toFixed(1)} ms a batch${shown}`);
    }
  }
} finally {
  await client.end().catch(() => undefined);
  await store.close();
  await server.close();
  rmSync(dir, { recursive: true, force: true });
}
