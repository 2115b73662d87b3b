import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@loom/config';
import { COMPONENT_KINDS, type ResourceInstance } from '@loom/domain';
import { type GraphStore, type GraphTransaction } from '@loom/graph';
import { capturedLogger } from '@loom/service-kit/testing';
import { readFileSync } from 'node:fs';
import { annotationFromConllu, parseConllu, parseIob, testDataDir } from '@loom/nlp-training';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { GraphStores } from '../src/components/graph-stores.js';
import { componentFactories } from '../src/components/registry.js';
import { type LoomMessage } from '../src/runtime/component.js';
import { tokenGraphDocument } from '../src/components/relations/token-graph-document.js';
import { TOKEN_GRAPH_INDEXES, writeTokenGraph } from '../src/components/relations/token-graph.js';
import { NEO4J_TOKEN_GRAPH_STATEMENTS } from '../src/components/relations/token-graph-neo4j.js';
import { dryRun } from '../src/dry-run.js';
import { WorkflowRun } from '../src/runtime/workflow-run.js';
import { componentNames } from './component-names.js';
import { GRAPH_BACKENDS, type GraphBackend, startGraphBackend } from './graph-backends.js';
import { annotation } from './relations/annotations.js';
import { BASED_IN, BLETCHLEY, LEADS, LIVES_IN, NEGATED, RULES, TURING, WORKS_FOR } from './relations/fixtures.js';
import { captureSink, instance, workflowOf } from './workflows.js';

const { logger } = capturedLogger();
const root = mkdtempSync(join(tmpdir(), 'loom-relations-'));
const config = loadConfig({ env: {}, overrides: [`loom.embedded.graph.dataDir=${join(root, 'embedded')}`] });

let backend: GraphBackend;
let helper: GraphStore;
let knowledge: GraphStore;
const stores = new GraphStores(config, logger);
const runs: WorkflowRun[] = [];
let firstCounts: Record<string, number> = {};

const { INLET, WRITER, EXTRACT, SINK, FAILED } = componentNames('relations test', {
  INLET: 'Documents',
  WRITER: 'Token Occurrence Writer',
  EXTRACT: 'Relations',
  SINK: 'Sink',
  FAILED: 'Failures',
});
const KNOWLEDGE = 'Knowledge graph_5f6a7b8c-9d0e-4f1a-9b2c-4d5e6f7a8b9c';

afterEach(async () => {
  for (const run of runs.splice(0)) await run.stop(5_000);
});

afterAll(async () => {
  await stores.close();
  rmSync(root, { recursive: true, force: true });
});

function resource(graph: string, name = `Graph ${graph}_6a7b8c9d-0e1f-4a2b-8c3d-5e6f7a8b9c0d`): ResourceInstance {
  return backend.resource(graph, { name });
}

/** inlet → Token Occurrence Writer → Rule Based Relation Extraction → sink, both on the helper graph. */
async function startPipeline(options: { target?: boolean; rules?: unknown } = {}) {
  const sink = captureSink();
  const failures = captureSink();
  const factories = new Map(componentFactories(config, { graphStores: stores }));
  factories.set(COMPONENT_KINDS.LOGGER, sink.factory);
  factories.set(COMPONENT_KINDS.MESSAGE_FILTER, failures.factory);
  const target = resource('knowledge', KNOWLEDGE);
  const extractOptions = { rules: options.rules ?? RULES, failure_handler: FAILED, ...(options.target === true ? { target_resource: KNOWLEDGE } : {}) };
  const workflow = {
    ...workflowOf(
      'relations test',
      [
        instance(COMPONENT_KINDS.INLET, INLET),
        { ...instance(COMPONENT_KINDS.TOKEN_OCCURRENCE_WRITER, WRITER, { failure_handler: FAILED }), resource: resource('nlp_helper') },
        { ...instance(COMPONENT_KINDS.RULE_BASED_RELATION_EXTRACTION, EXTRACT, extractOptions), resource: resource('nlp_helper') },
        instance(COMPONENT_KINDS.LOGGER, SINK),
        instance(COMPONENT_KINDS.MESSAGE_FILTER, FAILED),
      ],
      [
        [INLET, WRITER],
        [WRITER, EXTRACT],
        [EXTRACT, SINK],
      ],
    ),
    resources: [target],
  };
  const run = await WorkflowRun.start(workflow, { factories, logger });
  runs.push(run);
  const publish = (id: string, body: Record<string, unknown>) => run.publish(INLET, { id, body, headers: {} }, new AbortController());
  return { run, publish, sink: sink.received, failures: failures.received };
}

async function count(store: GraphStore, query: string): Promise<number> {
  const [row] = await store.run(query);
  return Number(Object.values(row ?? {})[0]);
}

type Pair = [relation: string, subject: string, object: string, sentence: number];
const pairsOf = (message: LoomMessage | undefined): Pair[] =>
  ((message?.body['_relations'] ?? []) as { relation: string; subject: { text: string }; object: { text: string }; sentence: number }[]).map((relation) => [
    relation.relation,
    relation.subject.text,
    relation.object.text,
    relation.sentence,
  ]);

/**
 * The store with every call that crosses its port recorded: statement texts, and for a bulk write its labels and
 * types (the statements it becomes depend on those alone).
 */
function countingStore(store: GraphStore): { store: GraphStore; calls: string[] } {
  const calls: string[] = [];
  const counted = (tx: GraphTransaction): GraphTransaction => ({
    run: (query, parameters, options) => {
      calls.push(`run ${query}`);
      return tx.run(query, parameters, options);
    },
    createInBulk: (write, options) => {
      const nodes = (write.nodes ?? []).filter((batch) => batch.nodes.length > 0).map((batch) => batch.label);
      const types = (write.relationships ?? []).filter((batch) => batch.relationships.length > 0).map((batch) => batch.type);
      calls.push(`createInBulk ${nodes.join(',')} ${types.join(',')}`);
      return tx.createInBulk(write, options);
    },
  });
  const wrapped: GraphStore = {
    kind: store.kind,
    readOnly: store.readOnly,
    run: (query, parameters, options) => store.run(query, parameters, options),
    read: (query, parameters, options) => store.read(query, parameters, options),
    stream: (query, parameters, options) => store.stream(query, parameters, options),
    writeTransaction: (work) => store.writeTransaction((tx) => work(counted(tx))),
    ensurePropertyIndexes: (indexes) => store.ensurePropertyIndexes(indexes),
    close: () => store.close(),
  };
  return { store: wrapped, calls };
}

// on Neo4j Community, which has one database, the helper graph and the knowledge graph are that one
describe.each(GRAPH_BACKENDS)('Token Occurrence Writer and Rule Based Relation Extraction on %s', { timeout: 180_000 }, (backendName) => {
  beforeAll(async () => {
    backend = await startGraphBackend(backendName, root);
    helper = backend.store('nlp_helper');
    knowledge = backend.store('knowledge');
    // a server starts in seconds, and much longer on a loaded machine
  }, 180_000);
  beforeEach(() => backend.clear());
  afterAll(() => backend?.close());

  it('finds the pairs a person would mark, respects negation, and writes each document once', async () => {
    const { publish, sink, failures } = await startPipeline();
    await publish('doc-1', { title: 'one', _annotation: annotation([WORKS_FOR, NEGATED, LEADS], 'doc-1') });
    await publish('doc-2', { _annotation: annotation([BASED_IN, LIVES_IN], 'doc-2') });
    await expect.poll(() => sink.length).toBe(2);
    expect(failures).toEqual([]);
    const [first, second] = [sink.find((m) => m.id === 'doc-1'), sink.find((m) => m.id === 'doc-2')];
    expect(first?.body).toMatchObject({ title: 'one', node_id: 'doc-1' });
    // expected, and why:
    expect(pairsOf(first)).toEqual([
      // Ada Lovelace is the subject of "works", whose oblique "Analytical Engines" takes "for"
      ['WORKS_FOR', 'Ada Lovelace', 'Analytical Engines', 0],
      // "does not work for": works-for requires the verb not negated; its negated counterpart matches instead
      ['DOES_NOT_WORK_FOR', 'Charles Babbage', 'Analytical Engines', 1],
      // Grace Hopper is the subject of "leads", "Navy Lab" its object
      ['LEADS', 'Grace Hopper', 'Navy Lab', 2],
    ]);
    expect(pairsOf(second)).toEqual([
      // "Analytical Engines is based in London": passive subject of "based", oblique with "in"
      ['BASED_IN', 'Analytical Engines', 'London', 0],
      // "Ada Lovelace lives in London with Charles Babbage": London has "in"; Charles Babbage ("with") is a PERSON, not a LOCATION
      ['LIVES_IN', 'Ada Lovelace', 'London', 1],
    ]);
    const works = (first?.body['_relations'] as Record<string, unknown>[])[0];
    expect(works).toEqual({
      rule: 'works-for',
      relation: 'WORKS_FOR',
      sentence: 0,
      subject: { text: 'Ada Lovelace', type: 'PERSON', start: 0, end: 12 },
      object: { text: 'Analytical Engines', type: 'ORGANIZATION', start: 23, end: 41 },
      evidence: [
        { index: 1, text: 'Ada', lemma: 'Ada', pos: 'NNP', start: 0, end: 3 },
        { index: 3, text: 'works', lemma: 'work', pos: 'VBZ', start: 13, end: 18, step: { relation: 'nsubj', direction: 'up' } },
        { index: 6, text: 'Engines', lemma: 'Engines', pos: 'NNPS', start: 34, end: 41, step: { relation: 'obl', direction: 'down' } },
      ],
    });
  });

  it('finds nothing across sentence boundaries, even along a dependency that crosses them', async () => {
    const { publish, sink } = await startPipeline();
    await publish('turing', { _annotation: annotation([TURING, BLETCHLEY], 'turing') });
    await expect.poll(() => sink.length).toBe(1);
    expect(pairsOf(sink[0])).toEqual([]);
    // a parser error that linked "works" (sentence 0) to "Park" (sentence 1): works-for would match the path
    // Alan Turing -nsubj-> works -obl-> Bletchley Park (with "at"), were it not for the one-sentence limit
    await helper.run("MATCH (a:TagOccurrence), (b:TagOccurrence) WHERE a.id = 'turing_0_3' AND b.id = 'turing_1_5' CREATE (a)-[:OBL {specific: null}]->(b)");
    const again = await startPipeline();
    await again.publish('turing-again', { _annotation: annotation([TURING, BLETCHLEY], 'turing') });
    await expect.poll(() => again.sink.length).toBe(1);
    expect(pairsOf(again.sink[0])).toEqual([]);
  });

  it('writes the relations into the target graph once, however often the documents come', async () => {
    const { publish, sink } = await startPipeline({ target: true });
    await publish('a', { _annotation: annotation([WORKS_FOR, LEADS], 'target-doc') });
    await publish('b', { _annotation: annotation([WORKS_FOR, LEADS], 'target-doc') });
    await expect.poll(() => sink.length).toBe(2);
    const relations = await knowledge.run(
      'MATCH (a:Entity)-[r]->(b:Entity) RETURN a.name AS subject, type(r) AS relation, b.name AS object, r.rule AS rule, r.sentence AS sentence ORDER BY sentence',
    );
    expect(relations).toEqual([
      { subject: 'Ada Lovelace', relation: 'WORKS_FOR', object: 'Analytical Engines', rule: 'works-for', sentence: 0 },
      { subject: 'Grace Hopper', relation: 'LEADS', object: 'Navy Lab', rule: 'leads', sentence: 1 },
    ]);
    expect(await count(knowledge, 'MATCH (e:Entity) RETURN count(e) AS c')).toBe(4);
  });

  it('fails a message without an annotation naming the field, and writes the others', async () => {
    const { publish, sink, failures } = await startPipeline();
    await publish('good', { _annotation: annotation([LEADS], 'good-doc') });
    await publish('bad', { _annotation: { sentences: [{ index: 0, tokens: [{ index: 1, word: 'x' }] }] } });
    await publish('none', { text: 'no annotation' });
    await expect.poll(() => sink.length + failures.length).toBe(3);
    expect(sink.map((message) => message.id)).toEqual(['good']);
    const errors = Object.fromEntries(failures.map((failure) => [failure.body['messageId'], failure.body['error']]));
    expect(errors['bad']).toMatch(/^body\._annotation\.sentences\[0\]\.tokens\[0\]\.originalText: required field is missing/);
    expect(errors['none']).toMatch(/^body\._annotation: is missing/);
  });

  it('dry run: shows the relations a rule set finds in a fixture annotation, on a scratch graph, writing nothing', async () => {
    const factories = componentFactories(config, { graphStores: stores });
    const workflow = {
      ...workflowOf(
        'relations dry run',
        [
          instance(COMPONENT_KINDS.INLET, INLET),
          { ...instance(COMPONENT_KINDS.TOKEN_OCCURRENCE_WRITER, WRITER), resource: resource('nlp_helper') },
          {
            ...instance(COMPONENT_KINDS.RULE_BASED_RELATION_EXTRACTION, EXTRACT, { rules: RULES, target_resource: KNOWLEDGE }),
            resource: resource('nlp_helper'),
          },
        ],
        [
          [INLET, WRITER],
          [WRITER, EXTRACT],
        ],
      ),
      resources: [resource('knowledge', KNOWLEDGE)],
    };
    const outputs = await dryRun(
      workflow,
      [{ id: 'sample', body: { _annotation: annotation([LEADS, BASED_IN], 'dry-run-doc') }, headers: {} }],
      { inlet: '' },
      factories,
      logger,
    );
    const extraction = outputs.find((output) => output.component === EXTRACT);
    expect(extraction).toMatchObject({ skipped: false, errors: [] });
    const relations = (extraction?.messages[0]?.body?.['_relations'] ?? []) as { relation: string; subject: { text: string }; object: { text: string } }[];
    expect(relations.map((relation) => [relation.relation, relation.subject.text, relation.object.text])).toEqual([
      ['LEADS', 'Grace Hopper', 'Navy Lab'],
      ['BASED_IN', 'Analytical Engines', 'London'],
    ]);
    // neither the helper graph nor the target saw the document
    expect(await count(helper, "MATCH (d:AnnotatedText) WHERE d.id = 'dry-run-doc' RETURN count(d) AS c")).toBe(0);
    expect(await count(knowledge, "MATCH ()-[r]->() WHERE r.document = 'dry-run-doc' RETURN count(r) AS c")).toBe(0);
  });

  it('EWT dev sentences with UNER entities: the graph counts equal the CoNLL-U counts, and writing again changes none', async () => {
    const data = testDataDir();
    const sentences = parseConllu(readFileSync(join(data, 'ud-english-ewt', 'en_ewt-ud-dev.conllu'), 'utf8')).slice(0, 30);
    const entities = new Map(
      parseIob(readFileSync(join(data, 'uner-english-ewt', 'en_ewt-ud-dev.iob2'), 'utf8')).map((sentence) => [sentence.sentId!, sentence]),
    );
    // documents of up to 6 sentences, as the converter makes them
    const documents = Array.from({ length: 5 }, (_, d) => annotationFromConllu(sentences.slice(d * 6, d * 6 + 6), { docId: `ewt-dev-${d}`, entities }));
    const words = sentences.reduce((sum, sentence) => sum + sentence.words.length, 0);
    const helperCounts = async () => ({
      sentences: await count(helper, "MATCH (d:AnnotatedText)-[:CONTAINS_SENTENCE]->(s:Sentence) WHERE d.id STARTS WITH 'ewt-dev-' RETURN count(s) AS c"),
      // the sentence chain of each document: its first sentence, and each sentence to the next
      firsts: await count(helper, "MATCH (d:AnnotatedText)-[:FIRST_SENTENCE]->(:Sentence) WHERE d.id STARTS WITH 'ewt-dev-' RETURN count(d) AS c"),
      nexts: await count(
        helper,
        "MATCH (d:AnnotatedText)-[:CONTAINS_SENTENCE]->(:Sentence)-[n:NEXT_SENTENCE]->(:Sentence) WHERE d.id STARTS WITH 'ewt-dev-' RETURN count(n) AS c",
      ),
      tokens: await count(
        helper,
        "MATCH (d:AnnotatedText)-[:CONTAINS_SENTENCE]->(:Sentence)-[:SENTENCE_TAG_OCCURRENCE]->(t:TagOccurrence) WHERE d.id STARTS WITH 'ewt-dev-' RETURN count(t) AS c",
      ),
      // every relationship between two occurrences is a dependency (the root's to itself included)
      dependencies: await count(
        helper,
        "MATCH (d:AnnotatedText)-[:CONTAINS_SENTENCE]->(:Sentence)-[:SENTENCE_TAG_OCCURRENCE]->(a:TagOccurrence)-[r]->(:TagOccurrence) WHERE d.id STARTS WITH 'ewt-dev-' RETURN count(r) AS c",
      ),
      nodes: await count(helper, 'MATCH (n) RETURN count(n) AS c'),
      relationships: await count(helper, 'MATCH ()-[r]->() RETURN count(r) AS c'),
    });
    for (const pass of [1, 2]) {
      const { publish, sink, failures } = await startPipeline();
      for (const [d, document] of documents.entries()) await publish(`ewt-${pass}-${d}`, { _annotation: document });
      await expect.poll(() => sink.length + failures.length, { timeout: 150_000 }).toBe(documents.length);
      expect(failures).toEqual([]);
      const counts = await helperCounts();
      expect({ sentences: counts.sentences, firsts: counts.firsts, nexts: counts.nexts, tokens: counts.tokens, dependencies: counts.dependencies }).toEqual({
        sentences: 30,
        firsts: documents.length,
        nexts: 30 - documents.length,
        tokens: words,
        dependencies: words,
      });
      if (pass === 2) expect(counts).toEqual(firstCounts);
      firstCounts = counts;
    }
  });

  it('writes a batch of documents in the statements of one document, however many sentences and tokens it has', async () => {
    await helper.ensurePropertyIndexes(TOKEN_GRAPH_INDEXES);
    const statements = async (copies: number): Promise<string[]> => {
      const counting = countingStore(helper);
      const documents = Array.from({ length: copies }, (_, i) => tokenGraphDocument(annotation([WORKS_FOR, LEADS], `bulk-${copies}-${i}`), 'body._annotation'));
      expect(await writeTokenGraph(counting.store, documents)).toEqual({ written: documents.map((document) => document.id), unchanged: [] });
      return counting.calls;
    };
    const one = await statements(1);
    const many = await statements(12);
    // the hash lookup, then on AGE one bulk write, on Neo4j two statements (the tags; the documents with their sentences and tokens)
    expect(many).toEqual(one);
    expect(one.filter((call) => call.startsWith('createInBulk'))).toHaveLength(helper.kind === 'neo4j' ? 0 : 1);
    expect(one).toHaveLength(helper.kind === 'neo4j' ? 3 : 2);
    if (helper.kind === 'neo4j') expect(one.slice(1)).toEqual(NEO4J_TOKEN_GRAPH_STATEMENTS.map((statement) => `run ${statement}`));
    const tokens = annotation([WORKS_FOR, LEADS], 'x').sentences.reduce((sum, sentence) => sum + sentence.tokens.length, 0);
    expect(
      await count(
        helper,
        "MATCH (d:AnnotatedText)-[:CONTAINS_SENTENCE]->(:Sentence)-[:SENTENCE_TAG_OCCURRENCE]->(t:TagOccurrence) WHERE d.id STARTS WITH 'bulk-12-' RETURN count(t) AS c",
      ),
    ).toBe(12 * tokens);
  });

  // an AGE vertex has exactly one label: the labels neo4j-nlp adds besides are written on Neo4j only
  if (backendName === 'Neo4j')
    it('gives entity tags their NE_<type> label and the root occurrence the Root label, as neo4j-nlp does', async () => {
      const { publish, sink } = await startPipeline();
      await publish('labels', { _annotation: annotation([LEADS], 'labels-doc') });
      await expect.poll(() => sink.length).toBe(1);
      const tags = await helper.run('MATCH (g:Tag) WHERE g:NE_Person OR g:NE_Organization RETURN g.id AS tag, labels(g) AS labels ORDER BY tag');
      expect(tags).toEqual([
        { tag: 'Grace_en', labels: ['Tag', 'NE_Person'] },
        { tag: 'Hopper_en', labels: ['Tag', 'NE_Person'] },
        { tag: 'Lab_en', labels: ['Tag', 'NE_Organization'] },
        { tag: 'Navy_en', labels: ['Tag', 'NE_Organization'] },
      ]);
      expect(await helper.run('MATCH (t:Root) RETURN t.value AS value, labels(t) AS labels')).toEqual([{ value: 'leads', labels: ['TagOccurrence', 'Root'] }]);
    });
});
