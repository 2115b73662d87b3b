import { readFileSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@loom/config';
import {
  COMPONENT_KINDS,
  componentInstance,
  derivedInstanceName,
  findResourceDefinition,
  readWorkflowText,
  RESOURCE_KINDS,
  serializeCompactWorkflow,
  type ResourceInstance,
  type WorkflowConfiguration,
  workflowToCompact,
} from '@loom/domain';
import { capturedLogger } from '@loom/service-kit/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { GraphStores } from '../src/components/graph-stores.js';
import { componentFactories } from '../src/components/registry.js';
import { type ComponentFactory, type LoomMessage, outcome } from '../src/runtime/component.js';
import { WorkflowRun } from '../src/runtime/workflow-run.js';
import { annotation } from './relations/annotations.js';
import { captureSink } from './workflows.js';
import { LEADS, WORKS_FOR } from './relations/fixtures.js';
import { shippedRulesOption } from './relations/rule-set.js';

// examples/relations.workflow.yaml (compact form) is made here from the catalog and the shipped rule set,
// examples/relations/rules.json (UPDATE_EXAMPLE=1 writes it), so it cannot drift from the catalog or from the rules
// test/relations-rule-set.test.ts checks; then it runs on the embedded graph. Its
// entity extraction calls the annotation skill registered under that name through the skill gateway; here a stand-in
// that answers the fixture annotation takes its place (services/cli/test/relations-example.test.ts runs it with the skill).

const FILE = new URL('../../../examples/relations.workflow.yaml', import.meta.url);
const HEADER =
  '# yaml-language-server: $schema=../libs/domain/schema/compact-workflow.schema.json\n' +
  '# made from the catalog and the shipped rule set (relations/rules.json, where each rule has its example sentences)\n' +
  '# by services/executor/test/relations-example.test.ts (UPDATE_EXAMPLE=1)\n';
const WORKFLOW = 'Relations';
const component = (name: string): string => derivedInstanceName(WORKFLOW, 'component', name);
const IDS = {
  inlet: component('Articles'),
  extraction: component('Entity extraction'),
  writer: component('Token Occurrence Writer'),
  relations: component('Rule Based Relation Extraction'),
  graphWriter: component('Write relations'),
  failures: component('Failures'),
  helper: derivedInstanceName(WORKFLOW, 'resource', 'NLP helper graph'),
  knowledge: derivedInstanceName(WORKFLOW, 'resource', 'Knowledge graph'),
};

/**
 * The knowledge-graph writer records the article; the relations reach the knowledge graph through the extraction's
 * `target_resource`, idempotently. (A writer query that MERGEs a relationship per row of `$_relations` creates no
 * relationship on AGE once there are two rows; measured here, see docs/decisions.md.)
 */
const WRITE_ARTICLE = 'MERGE (d:Article {id: $node_id}) SET d.text = $text, d.relations = size($_relations)';

function graph(name: string, graphName: string): ResourceInstance {
  const definition = findResourceDefinition(RESOURCE_KINDS.AGE_DATABASE)!;
  return { name, resource: definition, parameters: { host: 'embedded', user: 'postgres', graph: graphName } };
}

function example(): WorkflowConfiguration {
  const helper = graph(IDS.helper, 'nlp_helper');
  const knowledge = graph(IDS.knowledge, 'knowledge');
  const extraction = {
    ...componentInstance(COMPONENT_KINDS.ENTITY_EXTRACTION, IDS.extraction, { failure_handler: IDS.failures }),
    // named only: the skill registered as `annotation` (on `npm start`, loom's own, at its real port)
    skill: { name: 'annotation', url: '' },
    skillConfiguration: { inputs: { text: 'text' }, outputs: { annotation: '_annotation', entities: '_entities', merged_entities: '_merged_entities' } },
  };
  return {
    name: WORKFLOW,
    autoStart: false,
    components: [
      componentInstance(COMPONENT_KINDS.INLET, IDS.inlet),
      extraction,
      {
        ...componentInstance(COMPONENT_KINDS.TOKEN_OCCURRENCE_WRITER, IDS.writer, { annotation_field: '_annotation', failure_handler: IDS.failures }),
        resource: helper,
      },
      {
        ...componentInstance(COMPONENT_KINDS.RULE_BASED_RELATION_EXTRACTION, IDS.relations, {
          rules: shippedRulesOption(),
          target_resource: IDS.knowledge,
          failure_handler: IDS.failures,
        }),
        resource: helper,
      },
      {
        ...componentInstance(COMPONENT_KINDS.GRAPH_DATABASE_WRITER, IDS.graphWriter, { query: WRITE_ARTICLE, failure_handler: IDS.failures }),
        resource: knowledge,
      },
      componentInstance(COMPONENT_KINDS.LOGGER, IDS.failures, { level: 'warn' }),
    ],
    links: [
      { from: IDS.inlet, to: IDS.extraction },
      { from: IDS.extraction, to: IDS.writer },
      { from: IDS.writer, to: IDS.relations },
      { from: IDS.relations, to: IDS.graphWriter },
    ],
    resources: [helper, knowledge],
    skills: [],
    workflowResources: [],
  };
}

const { logger } = capturedLogger();
const root = mkdtempSync(join(tmpdir(), 'loom-relations-example-'));
const config = loadConfig({ env: {}, overrides: [`loom.embedded.graph.dataDir=${join(root, 'embedded')}`] });
const stores = new GraphStores(config, logger);
afterAll(async () => {
  await stores.close();
  rmSync(root, { recursive: true, force: true });
});

describe('examples/relations.workflow.yaml', () => {
  it('is made from the catalog and the tested rules, and is valid', () => {
    if (process.env['UPDATE_EXAMPLE'] === '1') writeFileSync(FILE, `${HEADER}${serializeCompactWorkflow(example())}`);
    // read through the converter, which checks it against the catalog; compared in the compact form, where options at their default are left out
    const { workflow } = readWorkflowText(readFileSync(FILE, 'utf8'), FILE.pathname);
    expect(workflowToCompact(workflow), 'refresh with UPDATE_EXAMPLE=1 npx vitest run test/relations-example.test.ts (in services/executor)').toEqual(
      workflowToCompact(example()),
    );
  });

  it('runs on the embedded graph: relations reach the knowledge graph once, however often the article comes', { timeout: 120_000 }, async () => {
    const { workflow } = readWorkflowText(readFileSync(FILE, 'utf8'), FILE.pathname);
    const factories = new Map(componentFactories(config, { graphStores: stores }));
    // stand-in for the entity extraction skill component: the annotation the reference skill would give
    const standIn: ComponentFactory = {
      kind: 'processor',
      create: () =>
        Promise.resolve({
          process: (batch: readonly LoomMessage[]) =>
            Promise.resolve(
              batch.map((message) => outcome.emit({ ...message, body: { ...message.body, _annotation: annotation([WORKS_FOR, LEADS], 'article-1') } })),
            ),
          close: () => Promise.resolve(),
        }),
    };
    factories.set(COMPONENT_KINDS.ENTITY_EXTRACTION, standIn);
    const { factory: failureSink, received: failures } = captureSink();
    factories.set(COMPONENT_KINDS.LOGGER, failureSink);
    const run = await WorkflowRun.start(workflow, { factories, logger });
    try {
      for (const id of ['first', 'again']) {
        await run.publish(
          IDS.inlet,
          { id, body: { text: 'Ada Lovelace works for Analytical Engines. Grace Hopper leads the Navy Lab.' }, headers: {} },
          new AbortController(),
        );
      }
      await expect
        .poll(() => failures.length + (run.counters().find((counters) => counters.name === IDS.graphWriter)?.messagesOut ?? 0), { timeout: 90_000 })
        .toBe(2);
      expect(failures.map((failure) => failure.body['error'])).toEqual([]);
    } finally {
      await run.stop(5_000);
    }
    const embedded = await stores.open(graph('check', 'knowledge'));
    try {
      const rows = await embedded.run(
        'MATCH (a:Entity)-[r]->(b:Entity) RETURN a.name AS subject, type(r) AS relation, b.name AS object, r.document AS document',
      );
      expect(rows.sort((x, y) => JSON.stringify(x['relation']).localeCompare(JSON.stringify(y['relation'])))).toEqual([
        { subject: 'Grace Hopper', relation: 'LEADS', object: 'Navy Lab', document: 'article-1' },
        { subject: 'Ada Lovelace', relation: 'WORKS_FOR', object: 'Analytical Engines', document: 'article-1' },
      ]);
      expect(await embedded.run('MATCH (d:Article) RETURN d.id AS id, d.relations AS relations')).toEqual([{ id: 'article-1', relations: 2 }]);
    } finally {
      await embedded.close();
    }
  });
});
