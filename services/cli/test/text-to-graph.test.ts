import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startNeo4j } from '@loom/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type InProcessLoom, runCli, startLoom } from './loom-in-process.js';
import { workflowOnNeo4j } from './neo4j-workflow.js';

/**
 * examples/text-to-graph.workflow.yaml (the compact form) as a newcomer runs it after `npm start`: loom with its
 * annotation and keyword skills beside it (`--with-skills`, on free ports here), the skills
 * registered with the skill gateway at start, the example pushed as it is, a text published,
 * and the embedded graph asked what it now holds.
 */
const example = fileURLToPath(new URL('../../../examples/text-to-graph.workflow.yaml', import.meta.url));
const WORKFLOW = 'Text to graph';
// the inlet by its plain name, as the compact file names it (its instance name is Documents_<derived uuid>)
const INLET = 'Documents';
const TEXT =
  'NASA tested the speed brake actuator of the space shuttle Discovery at the Kennedy Space Center in Florida. ' +
  'The speed brake actuator failed during the test, and engineers at Boeing replaced the actuator. ' +
  'A flight failure of the speed brake would have put the space shuttle at risk.';

let loom: InProcessLoom;
let neo4j: Awaited<ReturnType<typeof startNeo4j>>;
const dataDirectory = mkdtempSync(join(tmpdir(), 'loom-t2g-data-'));
beforeAll(async () => {
  const started = startLoom([
    '--with-skills',
    'annotation,keywords',
    '--skill-port',
    'annotation=0',
    '--skill-port',
    'keywords=0',
    '--set',
    'loom.auth.allowAnonymous=true',
    '--set',
    `loom.data.directory=${dataDirectory}`,
  ]);
  [loom, neo4j] = await Promise.all([started, startNeo4j()]);
}, 180_000);
afterAll(async () => {
  await Promise.all([loom?.stop(), neo4j?.close()]);
});

const loomAt = (...args: string[]) => runCli(['--address', loom.address, ...args]);

describe('examples/text-to-graph.workflow.yaml through loom serve --with-skills', () => {
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

  /**
   * Pushes and starts the workflow file, publishes the text, and checks the document, keywords and entities in the graph,
   * read as the README does: `loom graph query` through loom's ReadGraph, `target` naming the graph (`--graph`, `--workflow`).
   */
  async function textToGraph(file: string, workflow: string, target: readonly string[]): Promise<void> {
    const pushed = await loomAt('workflow', 'push', file);
    expect(pushed.stderr, pushed.stderr).toBe('');
    const started = await loomAt('workflow', 'start', workflow);
    expect(started.stderr).toBe('');
    const published = await loomAt(
      'message',
      'publish',
      workflow,
      '--inlet',
      INLET,
      '--body',
      JSON.stringify({ id: 'doc-1', title: 'Speed brake test', text: TEXT }),
    );
    expect(published.stderr).toBe('');

    const query = async (cypher: string): Promise<Record<string, unknown>[]> => {
      const answer = await loomAt('graph', 'query', ...target, '--output', 'json', cypher);
      expect(answer.stderr).toBe('');
      return (JSON.parse(answer.stdout) as { rows: Record<string, unknown>[] }).rows;
    };
    await expect
      .poll(async () => (await query('MATCH (:Document {id: "doc-1"})-[:MENTIONS]->(e:Entity) RETURN count(e) AS n'))[0]?.n, { timeout: 60_000, interval: 500 })
      .toBeGreaterThan(0);

    const keywords = (await query('MATCH (:Document {id: "doc-1"})-[r:HAS_KEYWORD]->(k:Keyword) RETURN k.value AS value, r.relevance AS relevance')).map(
      (row) => row.value,
    );
    expect(keywords).toEqual(expect.arrayContaining(['speed brake actuator', 'space shuttle']));
    const entities = (await query('MATCH (:Document {id: "doc-1"})-[:MENTIONS]->(e:Entity) RETURN e.label AS label, e.value AS value')).map(
      (row) => `${String(row.label)}:${String(row.value)}`,
    );
    // the `technology` pipeline's shipped dictionary types these; consecutive terms make one mention
    expect(entities).toEqual(expect.arrayContaining(['ORGANIZATION:NASA', 'TECHNOLOGY:speed brake actuator', 'TECHNOLOGY:space shuttle']));
    const status = await loomAt('workflow', 'status', workflow);
    expect(status.stdout).toMatch(/RUNNING/);
  }

  it('turns a published text into a document with its entities and keywords in the graph', async () => {
    await textToGraph(example, WORKFLOW, ['--graph', 'knowledge_graph']);
    // the gateway called the skills of its own process in memory (loom.skills.inProcess), each call a request in their log
    const calls = loom.logLines
      .map((line) => JSON.parse(line) as { msg?: string; route?: string; status?: number; inProcess?: boolean })
      .filter((line) => line.msg === 'request' && (line.route === '/v2/annotate' || line.route === '/extractKeywords'));
    expect(new Set(calls.map((line) => `${line.route} ${line.status} ${line.inProcess}`))).toEqual(
      new Set(['/v2/annotate 200 true', '/extractKeywords 200 true']),
    );
  }, 120_000);

  it('does the same with the graph on a Neo4j server', async () => {
    const onNeo4j = workflowOnNeo4j(example, neo4j, 'Text to graph on Neo4j_1e2f3a4b-5c6d-4e7f-9a8b-0c1d2e3f4a5b');
    await textToGraph(onNeo4j, 'Text to graph on Neo4j', ['--workflow', 'Text to graph on Neo4j']);
  }, 120_000);

  it('loom skill register, check, pipeline create and delete work against the running skills', async () => {
    const [annotation] = JSON.parse((await loomAt('--output', 'json', 'skill', 'list')).stdout) as { url: string }[];
    const base = new URL(annotation?.url ?? '').origin;
    // a second name for the same service, from options; the first from a file
    const registered = await loomAt(
      'skill',
      'register',
      '--capability',
      'entity-extraction',
      '--name',
      'nlp',
      '--url',
      `${base}/annotate`,
      '--pipeline',
      'default',
    );
    expect(registered.stderr).toBe('');
    // the command's own --version, which loom's global --version once swallowed (issue 36)
    const v2 = await loomAt(
      '--output',
      'json',
      'skill',
      'register',
      '--capability',
      'entity-extraction',
      '--name',
      'nlp-v2',
      '--url',
      `${base}/v2/annotate`,
      '--pipeline',
      'default',
      '--version',
      'v2',
    );
    expect(v2.stderr).toBe('');
    expect(JSON.parse(v2.stdout)).toMatchObject({ name: 'nlp-v2', version: 'v2' });
    const file = join(mkdtempSync(join(tmpdir(), 'loom-skill-')), 'keywords.json');
    writeFileSync(
      file,
      JSON.stringify({ capability: 'KEYWORD_EXTRACTION', name: 'kw', url: 'http://127.0.0.1:9/extractKeywords', parameters: { iterations: 30 } }),
    );
    expect((await loomAt('skill', 'register', file)).stderr).toBe('');
    const refused = await loomAt('skill', 'register', '--capability', 'keyword-extraction', '--name', 'bad', '--url', 'http://127.0.0.1:9/keywords');
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toMatch(/INVALID_ARGUMENT: .*url/);

    const checked = await loomAt('skill', 'check', 'nlp');
    expect(checked.status, checked.stderr).toBe(0);
    expect(checked.stdout).toMatch(/nlp\s+true/);
    const down = await loomAt('skill', 'check', 'kw');
    expect(down.status).toBe(1);

    // a pipeline with a dictionary in the skill's data directory: a TECHNOLOGY term comes back typed
    mkdirSync(join(dataDirectory, 'skills'), { recursive: true });
    writeFileSync(join(dataDirectory, 'skills', 'tools.tsv'), 'TypeScript\tTECHNOLOGY\n');
    const pipelineFile = join(mkdtempSync(join(tmpdir(), 'loom-pipeline-')), 'tools.json');
    writeFileSync(pipelineFile, JSON.stringify({ name: 'tools', annotators: ['tokenize', 'ssplit', 'pos', 'lemma', 'ner'], nerRegexFiles: ['tools.tsv'] }));
    const created = await loomAt('skill', 'pipeline', 'create', 'nlp', '--file', pipelineFile);
    expect(created.stderr, created.stderr).toBe('');
    expect(JSON.parse(created.stdout)).toMatchObject({ name: 'tools', created: true, dictionaryTerms: 1 });
    const annotated = await fetch(`${base}/annotate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'Ada writes TypeScript.', pipeline: 'tools' }),
    });
    expect(((await annotated.json()) as { entities: Record<string, string[]> }).entities.technology).toEqual(['TypeScript']);

    for (const name of ['nlp', 'nlp-v2', 'kw']) expect((await loomAt('skill', 'delete', name)).stderr).toBe('');
    const remaining = JSON.parse((await loomAt('--output', 'json', 'skill', 'list')).stdout) as { name: string }[];
    expect(remaining.map((skill) => skill.name)).toEqual(['annotation', 'keywords']);
  });
});
