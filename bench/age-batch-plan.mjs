#!/usr/bin/env node
// How AGE plans a batched writer statement (issue 38): `UNWIND $batch AS row MATCH|MERGE (d:Document {id: row.id})`
// on PGlite with AGE, Documents indexed on id as the graph writer indexes its MERGE keys, age.enable_containment off.
// Prints each plan's joins and scans and the time of a batch of 50 (mean of 20). Not part of `npm run bench`.
// Usage: node bench/age-batch-plan.mjs [documents in the graph, default 3000] [--no-hash-join]
import { PGlite } from '@electric-sql/pglite';
import { age } from '@electric-sql/pglite-age';

const documents = Number(process.argv.find((argument) => /^\d+$/.test(argument)) ?? 3000);
const noHashJoin = process.argv.includes('--no-hash-join');
const BATCH = 50;
const ROUNDS = 20;

const db = await PGlite.create({ extensions: { age } });
await db.exec(`CREATE EXTENSION IF NOT EXISTS age; LOAD 'age'; SET search_path = ag_catalog, "$user", public; SET age.enable_containment = off;`);
await db.exec(`SELECT create_graph('plan_graph')`);
await db.exec(`SELECT * FROM cypher('plan_graph', $$ UNWIND range(1, ${documents}) AS i CREATE (:Document {id: 'd' + toString(i)}) $$) AS (a agtype)`);
await db.exec(
  `CREATE INDEX document_id ON plan_graph."Document" USING btree (ag_catalog.agtype_access_operator(VARIADIC ARRAY[properties, '"id"'::ag_catalog.agtype]))`,
);
await db.exec(`ANALYZE plan_graph."Document"`);
if (noHashJoin) await db.exec('SET enable_hashjoin = off; SET enable_mergejoin = off');
const batch = JSON.stringify({ batch: Array.from({ length: BATCH }, (_, index) => ({ id: `d${index + 100}` })) });
const statements = [
  ['MATCH', 'UNWIND $batch AS row MATCH (d:Document {id: row.id}) RETURN d.id'],
  ['MERGE', 'UNWIND $batch AS row MERGE (d:Document {id: row.id}) RETURN d.id'],
];
console.log(`${documents} Documents in the graph${noHashJoin ? ', hash and merge joins off' : ''}`);
for (const [name, cypher] of statements) {
  const sql = `SELECT * FROM cypher('plan_graph', $$ ${cypher} $$, $1) AS (a agtype)`;
  const plan = await db.query(`EXPLAIN ${sql}`, [batch]);
  const steps = plan.rows.map((row) => String(Object.values(row)[0]).trim()).filter((line) => /Join|Loop|Scan/.test(line));
  const started = performance.now();
  for (let round = 0; round < ROUNDS; round++) await db.query(sql, [batch]);
  console.log(
    `${name}: ${((performance.now() - started) / ROUNDS).toFixed(1)} ms a batch of ${BATCH}; ${steps.map((step) => step.replace(/^->\s+/, '').replace(/\s+\(cost.*$/, '')).join(', ')}`,
  );
}
await db.close();
