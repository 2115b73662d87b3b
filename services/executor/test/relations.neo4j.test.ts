import { loadConfig } from '@loom/config';
import { COMPONENT_KINDS, findResourceDefinition, parseRelationRules, RESOURCE_KINDS, type ResourceInstance } from '@loom/domain';
import { RecordingDriver } from '@loom/graph/testing';
import { capturedLogger } from '@loom/service-kit/testing';
import { int, Record as Neo4jRecord, types } from 'neo4j-driver';
import { afterEach, describe, expect, it } from 'vitest';
import { GraphStores } from '../src/components/graph-stores.js';
import { ruleQuery } from '../src/components/relations/rule-cypher.js';
import { componentFactories } from '../src/components/registry.js';
import { WorkflowRun } from '../src/runtime/workflow-run.js';
import { annotation } from './relations/annotations.js';
import { LEADS, RULES } from './relations/fixtures.js';
import { captureSink, instance, workflowOf } from './workflows.js';

// The Cypher of the relation components checked at the driver boundary: there is no Neo4j server here. The same
// texts run on the embedded AGE graph in relations.test.ts; with LOOM_TEST_NEO4J_URI set, libs/graph's contract suite
// runs against a real server.

const { logger } = capturedLogger();
const config = loadConfig({ env: {} });
const runs: WorkflowRun[] = [];
afterEach(async () => {
  for (const run of runs.splice(0)) await run.stop(5_000);
});

const INLET = 'In_0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d';
const WRITER = 'Writer_1b2c3d4e-5f6a-4b7c-9d8e-0f1a2b3c4d5e';
const EXTRACT = 'Extract_2c3d4e5f-6a7b-4c8d-8e9f-1a2b3c4d5e6f';
const SINK = 'Sink_3d4e5f6a-7b8c-4d9e-9f0a-2b3c4d5e6f7a';

function neo4j(): ResourceInstance {
  const definition = findResourceDefinition(RESOURCE_KINDS.NEO4J_DATABASE)!;
  return {
    name: 'Helper_4e5f6a7b-8c9d-4e0f-8a1b-3c4d5e6f7a8b',
    resource: definition,
    parameters: { host: 'nlp.example.com', user: 'neo4j', password: 'pw-123456', database: 'nlp' },
  };
}

describe('relation components on Neo4j (recording driver)', () => {
  it('send the token graph in one transaction with the neo4j-nlp labels, and each rule as one statement over the documents', async () => {
    const driver = new RecordingDriver();
    const stores = new GraphStores(config, logger, { neo4jDriverFactory: driver.factory });
    const { factory: sink, received } = captureSink();
    const factories = new Map(componentFactories(config, { graphStores: stores }));
    factories.set(COMPONENT_KINDS.LOGGER, sink);
    const rules = parseRelationRules(RULES);
    const leads = ruleQuery(rules.rules.find((rule) => rule.name === 'leads')!);
    driver.answerWith((query) => {
      if (query !== leads.cypher) return [];
      // what Neo4j would answer for "Grace Hopper leads the Navy Lab": subject, verb and object occurrences
      const node = (id: number, properties: Record<string, unknown>) => new types.Node(int(id), ['TagOccurrence'], properties, `4:nlp:${id}`);
      const grace = {
        tokenIndex: 1,
        value: 'Grace',
        lemma: 'Grace',
        pos: 'NNP',
        startPosition: 0,
        endPosition: 5,
        ne: 'PERSON',
        entityId: 'd_0_e0',
        entityValue: 'Grace Hopper',
        entityStart: 0,
        entityEnd: 12,
      };
      const verb = { tokenIndex: 3, value: 'leads', lemma: 'lead', pos: 'VBZ', startPosition: 13, endPosition: 18 };
      const lab = {
        tokenIndex: 6,
        value: 'Lab',
        lemma: 'Lab',
        pos: 'NNP',
        startPosition: 28,
        endPosition: 31,
        ne: 'ORGANIZATION',
        entityId: 'd_0_e1',
        entityValue: 'Navy Lab',
        entityStart: 23,
        entityEnd: 31,
      };
      return [new Neo4jRecord(leads.columns as string[], ['neo-doc', 0, node(1, grace), node(3, verb), node(6, lab), 'NSUBJ', null, 'OBJ', null])];
    });
    const workflow = workflowOf(
      'neo4j relations',
      [
        instance(COMPONENT_KINDS.INLET, INLET),
        { ...instance(COMPONENT_KINDS.TOKEN_OCCURRENCE_WRITER, WRITER), resource: neo4j() },
        { ...instance(COMPONENT_KINDS.RULE_BASED_RELATION_EXTRACTION, EXTRACT, { rules: RULES }), resource: neo4j() },
        instance(COMPONENT_KINDS.LOGGER, SINK),
      ],
      [
        [INLET, WRITER],
        [WRITER, EXTRACT],
        [EXTRACT, SINK],
      ],
    );
    const run = await WorkflowRun.start(workflow, { factories, logger });
    runs.push(run);
    await run.publish(INLET, { id: 'm1', body: { _annotation: annotation([LEADS], 'neo-doc') }, headers: {} }, new AbortController());
    await expect.poll(() => received.length, { timeout: 10_000 }).toBe(1);
    await run.stop(5_000);
    await stores.close();

    const sent = driver.sent.map((statement) => statement.query);
    // indexes first, each its own auto-commit statement
    expect(sent.slice(0, 4)).toEqual([
      'CREATE INDEX loom_AnnotatedText_id IF NOT EXISTS FOR (n:`AnnotatedText`) ON (n.`id`)',
      'CREATE INDEX loom_Sentence_id IF NOT EXISTS FOR (n:`Sentence`) ON (n.`id`)',
      'CREATE INDEX loom_TagOccurrence_id IF NOT EXISTS FOR (n:`TagOccurrence`) ON (n.`id`)',
      'CREATE INDEX loom_Tag_id IF NOT EXISTS FOR (n:`Tag`) ON (n.`id`)',
    ]);
    const inTransaction = driver.sent.filter((statement) => statement.via === 'transaction');
    expect(inTransaction.every((statement) => statement.database === 'nlp' && statement.accessMode === 'WRITE')).toBe(true);
    const texts = inTransaction.map((statement) => statement.query);
    expect(texts[0]).toBe('UNWIND $ids AS wanted MATCH (d:AnnotatedText) WHERE d.id = wanted RETURN d.id AS doc, d.hash AS hash');
    expect(texts.some((text) => text.startsWith('UNWIND $docs AS doc CREATE (:AnnotatedText'))).toBe(true);
    // one chained statement for every dependency type of the document, governor to dependent, subtype kept as `specific`
    const dependencies = texts.find((text) => text.includes('CREATE (a)-[:NSUBJ {specific: e.specific}]->(b)'));
    for (const type of ['COMPOUND', 'DET', 'FLAT', 'NSUBJ', 'OBJ', 'PUNCT', 'ROOT']) expect(dependencies).toContain(`[:${type} {specific: e.specific}]`);
    // the labels an AGE vertex cannot have: Neo4j only
    expect(texts).toContain('UNWIND $tags AS tag MATCH (g:Tag) WHERE g.id = tag SET g:NE_Person');
    expect(texts).toContain('UNWIND $tags AS tag MATCH (g:Tag) WHERE g.id = tag SET g:NE_Organization');
    expect(texts.some((text) => text.endsWith('SET t:Root'))).toBe(true);
    expect(driver.events.filter((event) => event === 'commit')).toHaveLength(1);

    // each rule is one read of the documents of the batch, the same text AGE runs
    const ruleStatements = driver.sent.filter((statement) => statement.query.includes('MATCH (d:AnnotatedText)-[:CONTAINS_SENTENCE]->(s:Sentence)'));
    expect(ruleStatements).toHaveLength(rules.rules.length);
    expect(ruleStatements.find((statement) => statement.query === leads.cypher)?.parameters).toEqual({ ...leads.parameters, ids: ['neo-doc'] });
    expect(received[0]?.body).toMatchObject({
      node_id: 'neo-doc',
      _relations: [
        {
          rule: 'leads',
          relation: 'LEADS',
          sentence: 0,
          subject: { text: 'Grace Hopper', start: 0, end: 12 },
          object: { text: 'Navy Lab', start: 23, end: 31 },
        },
      ],
    });
  });
});
