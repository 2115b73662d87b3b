#!/usr/bin/env node
// What each part of text-to-graph's keyword writer costs on the embedded graph (issue 38): the statement of
// examples/text-to-graph.workflow.yaml's `Write keywords`, then the same with one part left out at a time, each on a
// fresh embedded graph (PGlite with AGE) with the writer's MERGE-key indexes, run as the graph writer runs a batch
// (lookupRowsByKey, insertTrailingRelationship) in batches of 32 Documents of 15 keywords each (keywords shared between
// documents, as in text). Prints this process's CPU milliseconds a document for each, from the second of two passes over
// the list (the first warms the process's JIT up). Not part of `npm run bench`.
// Usage: node bench/age-writer-parts.mjs [documents, default 320]
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RESOURCE_KINDS } from '@loom/domain';
import { mergeKeys, openGraphStore, startEmbeddedGraph } from '@loom/graph';
import { parse } from 'yaml';

const DOCUMENTS = Number(process.argv[2] ?? 320);
const BATCH = 32;
const KEYWORDS_A_DOCUMENT = 15;
const workflowFile = fileURLToPath(new URL('../examples/text-to-graph.workflow.yaml', import.meta.url));
const query = parse(readFileSync(workflowFile, 'utf8')).components['Write keywords'].options.query;
const without = (part) => {
  if (!query.includes(part)) throw new Error(`the writer's statement no longer has '${part}': update this script`);
  return query.replace(part, '');
};
const variants = [
  ['the whole statement', query],
  ['without SET d.title', without(' SET d.title = row.title')],
  ['without the NOT exists check', without(' WHERE NOT exists((d)-[:HAS_KEYWORD]->(k))')],
  [
    'the two MERGEs only',
    'UNWIND $batch AS row MERGE (d:Document {id: row.id}) WITH d, row UNWIND row._keywords AS keyword MERGE (k:Keyword {value: keyword.value})',
  ],
  ['the Document MERGE only', 'UNWIND $batch AS row MERGE (d:Document {id: row.id})'],
];
const options = { lookupRowsByKey: true, insertTrailingRelationship: true, columns: [] };

/** Document `index`'s row as the writer gets it. */
const row = (index) => ({
  id: `doc-${index}`,
  title: `Document ${index}`,
  _keywords: Array.from({ length: KEYWORDS_A_DOCUMENT }, (_, k) => ({ value: `keyword ${(index * 7 + k * 13) % 3000}`, relevance: 0.5 })),
});
const batchFrom = (first) => Array.from({ length: BATCH }, (_, offset) => row(first + offset));

/** This process's CPU milliseconds a document for the statement, on a fresh embedded graph after a warm-up batch. */
async function cpuMsADocument(statement) {
  const dir = mkdtempSync(join(tmpdir(), 'loom-writer-parts-'));
  const server = await startEmbeddedGraph({ dataDir: join(dir, 'pgdata') });
  const store = openGraphStore({
    resource: { qualifiedName: RESOURCE_KINDS.AGE_DATABASE },
    parameters: { host: server.host, port: server.port, user: 'postgres', password: '', graph: 'writer_parts' },
  });
  try {
    await store.ensurePropertyIndexes(mergeKeys(query));
    await store.run(statement, { batch: batchFrom(-BATCH) }, options);
    const before = process.cpuUsage();
    for (let first = 0; first < DOCUMENTS; first += BATCH) await store.run(statement, { batch: batchFrom(first) }, options);
    const cpu = process.cpuUsage(before);
    return (cpu.user + cpu.system) / 1000 / DOCUMENTS;
  } finally {
    await store.close();
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

console.log(`${DOCUMENTS} Documents of ${KEYWORDS_A_DOCUMENT} keywords, batches of ${BATCH}, each on a fresh embedded graph after a warm-up batch`);
for (const pass of [1, 2]) {
  for (const [name, statement] of variants) {
    const ms = await cpuMsADocument(statement);
    if (pass === 2) console.log(`${name.padEnd(30)} ${ms.toFixed(2)} ms CPU a document`);
  }
}
