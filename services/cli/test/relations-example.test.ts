import { fileURLToPath } from 'node:url';
import { graphQueryArguments } from '@loom/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type InProcessLoom, runCli, startLoom } from './loom-in-process.js';
import { embeddedGraphResource } from './loom-process.js';

/**
 * examples/relations.workflow.yaml (the compact form) as it runs after `npm start`: the annotation skill beside loom
 * (loom's own models) registered at start, the example pushed as it is, an article published, and
 * the relations read back from the knowledge graph. On the embedded graph only: the shipped rules on Neo4j are
 * executor/test/relations-bounded.test.ts's (every rule, AGE and Neo4j alike), and loom serve's skills writing into
 * Neo4j are text-to-graph.test.ts's; this file ran the example on a Neo4j server too (40 s of npm test's time).
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
beforeAll(async () => {
  loom = await startLoom(['--with-skills', 'annotation', '--skill-port', 'annotation=0', '--set', 'loom.auth.allowAnonymous=true']);
}, 180_000);
afterAll(async () => {
  await loom?.stop();
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
    await expect
      .poll(relations, { timeout: 150_000, interval: 500 })
      .toEqual(['Google BASED_IN London', 'Grace Hopper LEADS Navy Lab', 'John Smith WORKS_FOR Google']);
  }

  it('finds the relations of a published article with the annotation skill and writes them to the knowledge graph', { timeout: 120_000 }, async () => {
    await relationsOfArticle(example, WORKFLOW, () => embeddedGraphResource(loom, 'knowledge'));
  });
});
