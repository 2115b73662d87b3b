import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LoomProcess, runLoomAsync, startLoom } from './loom-process.js';

/**
 * examples/text-to-graph.workflow.json as a newcomer runs it after `npm start`: loom with its
 * annotation and keyword skills beside it (`--with-skills`, on free ports here), the skills
 * registered with the skill gateway at start, the example pushed as it is, a text published,
 * and the embedded graph asked what it now holds.
 */
const example = fileURLToPath(new URL('../../../examples/text-to-graph.workflow.json', import.meta.url));
const WORKFLOW = 'Text to graph';
const INLET = 'Documents_1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d';
const TEXT =
  'NASA tested the speed brake actuator of the space shuttle Discovery at the Kennedy Space Center in Florida. ' +
  'The speed brake actuator failed during the test, and engineers at Boeing replaced the actuator. ' +
  'A flight failure of the speed brake would have put the space shuttle at risk.';

let loom: LoomProcess;
beforeAll(async () => {
  loom = await startLoom(['--with-skills', 'annotation,keywords', '--skill-port', 'annotation=0', '--skill-port', 'keywords=0', '--set', 'loom.auth.allowAnonymous=true']);
});
afterAll(async () => {
  loom.child.kill('SIGTERM');
  await loom.exited;
});

const loomAt = (...args: string[]) => runLoomAsync(['--address', loom.address, ...args]);

/** The embedded graph as a resource file for `loom graph query` (its port from loom's log). */
function graphResource(): string {
  const started = loom.logLines.map((line) => JSON.parse(line) as { msg: string; port?: number }).find((entry) => entry.msg.startsWith('embedded graph'));
  expect(started?.port).toBeGreaterThan(0);
  const file = join(mkdtempSync(join(tmpdir(), 'loom-t2g-')), 'graph.json');
  writeFileSync(file, JSON.stringify({ resource: { qualifiedName: 'loom.resources.graph.AgeDatabase' }, parameters: { host: '127.0.0.1', port: started?.port, user: 'postgres', graph: 'knowledge_graph' } }));
  return file;
}

describe('examples/text-to-graph.workflow.json through loom serve --with-skills', () => {
  it('registered the skills running beside it with the skill gateway, and loom health shows them', async () => {
    const listed = await loomAt('--output', 'json', 'skill', 'list');
    expect(listed.stderr).toBe('');
    const skills = JSON.parse(listed.stdout) as { name: string; capability: string; url: string }[];
    expect(skills.map((skill) => [skill.name, skill.capability])).toEqual([
      ['annotation', 'ENTITY_EXTRACTION'],
      ['keywords', 'KEYWORD_EXTRACTION'],
    ]);
    expect(skills[0]?.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v2\/annotate$/);
    expect(skills[0]?.url).not.toContain(':8085/');

    // and `loom health` shows them, reachable
    const health = await loomAt('--output', 'json', 'health');
    expect(health.status, health.stderr).toBe(0);
    const reported = (JSON.parse(health.stdout) as { skills: { skill: string; reachable: boolean; circuit: string }[] }).skills;
    expect(reported.map((row) => [row.skill, row.reachable, row.circuit])).toEqual([
      ['annotation', true, 'CLOSED'],
      ['keywords', true, 'CLOSED'],
    ]);
    const text = await loomAt('health');
    expect(text.stdout).toMatch(/annotation\s+REACHABLE\s+\d+\s+CLOSED/);
  });

  it('turns a published text into a document with its entities and keywords in the graph', async () => {
    const pushed = await loomAt('workflow', 'push', example);
    expect(pushed.stderr, pushed.stderr).toBe('');
    const started = await loomAt('workflow', 'start', WORKFLOW);
    expect(started.stderr).toBe('');
    const published = await loomAt('message', 'publish', WORKFLOW, '--inlet', INLET, '--body', JSON.stringify({ id: 'doc-1', title: 'Speed brake test', text: TEXT }));
    expect(published.stderr).toBe('');

    const resource = graphResource();
    const query = async (cypher: string): Promise<Record<string, unknown>[]> => {
      const answer = await loomAt('graph', 'query', '--resource', resource, '--output', 'json', cypher);
      expect(answer.stderr).toBe('');
      return JSON.parse(answer.stdout) as Record<string, unknown>[];
    };
    await expect
      .poll(async () => (await query('MATCH (:Document {id: "doc-1"})-[:MENTIONS]->(e:Entity) RETURN count(e) AS n'))[0]?.n, { timeout: 60_000, interval: 500 })
      .toBeGreaterThan(0);

    const keywords = (await query('MATCH (:Document {id: "doc-1"})-[r:HAS_KEYWORD]->(k:Keyword) RETURN k.value AS value, r.relevance AS relevance')).map((row) => row.value);
    expect(keywords).toEqual(expect.arrayContaining(['speed brake actuator', 'space shuttle']));
    const entities = (await query('MATCH (:Document {id: "doc-1"})-[:MENTIONS]->(e:Entity) RETURN e.label AS label, e.value AS value')).map((row) => `${String(row.label)}:${String(row.value)}`);
    expect(entities).toEqual(expect.arrayContaining(['ORGANIZATION:NASA']));
    const status = await loomAt('workflow', 'status', WORKFLOW);
    expect(status.stdout).toMatch(/RUNNING/);
  }, 120_000);
});
