import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { embeddedGraphResource, type LoomProcess, runLoomAsync, startLoom } from './loom-process.js';

/**
 * examples/relations.workflow.json as it runs after `npm start`: the annotation skill beside loom
 * (loom's own models) registered at start, the example pushed as it is, an article published, and
 * the relations read back from the knowledge graph.
 */
const example = fileURLToPath(new URL('../../../examples/relations.workflow.json', import.meta.url));
const WORKFLOW = 'Relations';
const INLET = 'Articles_b2c3d4e5-f6a7-4b8c-9d0e-1f2a3b4c5d6e';
// sentences whose entities and dependencies loom's models get right (checked with libs/nlp): the
// rules of the example find WORKS_FOR in the first and LEADS in the second, and nothing across them
const TEXT = 'John Smith works for Google in London. Grace Hopper leads the Navy Lab.';

let loom: LoomProcess;
beforeAll(async () => {
  loom = await startLoom(['--with-skills', 'annotation', '--skill-port', 'annotation=0', '--set', 'loom.auth.allowAnonymous=true']);
});
afterAll(async () => {
  loom.child.kill('SIGTERM');
  await loom.exited;
});

const loomAt = (...args: string[]) => runLoomAsync(['--address', loom.address, ...args]);

describe('examples/relations.workflow.json through loom serve --with-skills', () => {
  it('finds the relations of a published article with the annotation skill and writes them to the knowledge graph', { timeout: 120_000 }, async () => {
    const pushed = await loomAt('workflow', 'push', example);
    expect(pushed.stderr).toBe('');
    const started = await loomAt('workflow', 'start', WORKFLOW);
    expect(started.stderr).toBe('');
    const published = await loomAt('message', 'publish', WORKFLOW, '--inlet', INLET, '--body', JSON.stringify({ text: TEXT }));
    expect(published.stderr).toBe('');

    const resource = embeddedGraphResource(loom, 'knowledge');
    const relations = async (): Promise<string[]> => {
      const answer = await loomAt(
        'graph',
        'query',
        '--resource',
        resource,
        '--output',
        'json',
        'MATCH (a:Entity)-[r]->(b:Entity) RETURN a.name AS subject, type(r) AS relation, b.name AS object',
      );
      expect(answer.stderr).toBe('');
      return (JSON.parse(answer.stdout) as { subject: string; relation: string; object: string }[])
        .map((row) => `${row.subject} ${row.relation} ${row.object}`)
        .sort();
    };
    await expect.poll(relations, { timeout: 90_000, interval: 500 }).toEqual(['Grace Hopper LEADS Navy Lab', 'John Smith WORKS_FOR Google']);
  });
});
