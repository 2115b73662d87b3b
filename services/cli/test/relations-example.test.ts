import { fileURLToPath } from 'node:url';
import { graphQueryArguments, startNeo4j } from '@loom/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type InProcessLoom, runCli, startLoom } from './loom-in-process.js';
import { embeddedGraphResource } from './loom-process.js';
import { neo4jResourceFile, workflowOnNeo4j } from './neo4j-workflow.js';

/**
 * examples/relations.workflow.yaml (the compact form) as it runs after `npm start`: the annotation skill beside loom
 * (loom's own models) registered at start, the example pushed as it is, an article published, and
 * the relations read back from the knowledge graph.
 */
const example = fileURLToPath(new URL('../../../examples/relations.workflow.yaml', import.meta.url));
const WORKFLOW = 'Relations';
// the inlet by its plain name, as the compact file names it
const INLET = 'Articles';
// sentences whose entities and dependencies loom's models get right (checked with libs/nlp): the
// rules of the example find WORKS_FOR (and Google BASED_IN London: an organisation in a place) in the first and LEADS
// in the second, and nothing across them
const TEXT = 'John Smith works for Google in London. Grace Hopper leads the Navy Lab.';

let loom: InProcessLoom;
let neo4j: Awaited<ReturnType<typeof startNeo4j>>;
beforeAll(async () => {
  [loom, neo4j] = await Promise.all([
    startLoom(['--with-skills', 'annotation', '--skill-port', 'annotation=0', '--set', 'loom.auth.allowAnonymous=true']),
    startNeo4j(),
  ]);
}, 180_000);
afterAll(async () => {
  await Promise.all([loom?.stop(), neo4j?.close()]);
});

const loomAt = (...args: string[]) => runCli(['--address', loom.address, ...args]);

describe('examples/relations.workflow.yaml through loom serve --with-skills', () => {
  /**
   * Pushes and starts the workflow file, publishes the article, and waits for its relations in the knowledge graph
   * (`knowledge` gives its resource file once the workflow runs: the embedded graph starts with it).
   */
  async function relationsOfArticle(file: string, workflow: string, knowledge: () => string): Promise<void> {
    const pushed = await loomAt('workflow', 'push', file);
    expect(pushed.stderr).toBe('');
    const started = await loomAt('workflow', 'start', workflow);
    expect(started.stderr).toBe('');
    const published = await loomAt('message', 'publish', workflow, '--inlet', INLET, '--body', JSON.stringify({ text: TEXT }));
    expect(published.stderr).toBe('');

    const resource = knowledge();
    const relations = async (): Promise<string[]> => {
      const answer = await loomAt(
        ...graphQueryArguments(resource, 'MATCH (a:Entity)-[r]->(b:Entity) RETURN a.name AS subject, type(r) AS relation, b.name AS object'),
      );
      expect(answer.stderr).toBe('');
      return (JSON.parse(answer.stdout) as { subject: string; relation: string; object: string }[])
        .map((row) => `${row.subject} ${row.relation} ${row.object}`)
        .sort();
    };
    // Neo4j plans the 42 statement texts of the shipped rules' 67 fixed paths on first use, up to about a minute on a
    // loaded 2-core machine (this test took 68 s at load average 20; docs/relations.md); AGE answers in seconds
    await expect
      .poll(relations, { timeout: 150_000, interval: 500 })
      .toEqual(['Google BASED_IN London', 'Grace Hopper LEADS Navy Lab', 'John Smith WORKS_FOR Google']);
  }

  it('finds the relations of a published article with the annotation skill and writes them to the knowledge graph', { timeout: 120_000 }, async () => {
    await relationsOfArticle(example, WORKFLOW, () => embeddedGraphResource(loom, 'knowledge'));
  });

  it('does the same with both graphs on a Neo4j server', { timeout: 180_000 }, async () => {
    const onNeo4j = workflowOnNeo4j(example, neo4j, 'Relations on Neo4j_0d1e2f3a-4b5c-4d6e-8f7a-9b0c1d2e3f4a');
    await relationsOfArticle(onNeo4j, 'Relations on Neo4j', () => neo4jResourceFile(neo4j));
  });
});
