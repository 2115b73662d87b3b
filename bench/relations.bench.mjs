// Sentences per second through the relation components on both graph backends: the embedded graph (PGlite with
// Apache AGE on loopback, in this process) and Neo4j 5 (the tests' launcher: Community Edition, its own JVM, Bolt on
// loopback). EWT dev sentences joined with their UNER entities (libs/nlp-training annotationFromConllu), grouped into
// documents at the treebank's `# newdoc` marks:
//   write:    inlet → Token Occurrence Writer → counting sink (the token graph of every sentence), all documents
//             published at once (the writer takes them in batches), and again one document per batch (each published
//             when the one before has arrived, as a slower annotation stage would hand them over)
//   evaluate: inlet of node_ids → Rule Based Relation Extraction with the shipped rule set and five more rules → counting sink (on that graph)
// Baselines, same run: the annotation skill's own sentences per second (its HTTP service on loopback, annotating the
// same documents' text one request at a time), the stage before these in a text-to-graph pipeline; and on each
// backend the graph database writer storing each sentence as one plain node with its text (`CREATE (:PlainSentence
// {id, text})`, batches of 20), i.e. what a token graph costs against not having one.
// Each side gets a fresh graph per round; ROUNDS rounds, medians reported. Counts are read back from the graph.
// On a loaded machine wall time says more about the neighbours than about the writer, so the batched write and the
// skill are also given in sentences per CPU second: the writer's of this process (executor, driver; on AGE the
// embedded graph too) plus the Neo4j JVM's, all its threads; the skill's of this process (client and server).
// Needs LOOM_NEO4J_LAUNCHER: `export $(node scripts/test-env/neo4j.mjs)` builds the launcher once.
// BENCH_ONLY=age|neo4j measures one backend (against the same skill baseline), BENCH_EVALUATE=0 the writes without rule
// evaluation (minutes on Neo4j), BENCH_WARMUP passes warm the server first; BENCH_SENTENCES and BENCH_ROUNDS size the run.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { COMPONENT_KINDS, componentInstance as instance } from '@loom/domain';
import { NlpPipeline } from '@loom/nlp';
import { annotationFromConllu, parseConllu, parseIob, testDataDir } from '@loom/nlp-training';
import { createAnnotationSkill } from '@loom/skill-annotation';
import { startSkillForTest } from '@loom/skill-service-kit/testing';
import { ageBackend, countIn as count, exampleRulesOption, median, neo4jBackend, processCpuSeconds, runComponent } from './relations-run.mjs';

const SENTENCES = Number(process.env.BENCH_SENTENCES ?? 600);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const ONLY = process.env.BENCH_ONLY;
const EVALUATE = process.env.BENCH_EVALUATE !== '0';
const WARMUP = Number(process.env.BENCH_WARMUP ?? 3);
if (ONLY !== undefined && ONLY !== 'age' && ONLY !== 'neo4j') throw new Error(`BENCH_ONLY must be age or neo4j, not ${ONLY}`);

// the shipped rules of examples/relations.workflow.yaml (read through the compact form's converter, with their word lists), and five more
const exampleRules = exampleRulesOption();
const RULES = {
  lists: exampleRules.lists,
  rules: [
    ...exampleRules.rules,
    {
      // not `member-of`: the shipped set has a rule of that name, and a rule set's names are unique
      name: 'member-of-nmod',
      relation: 'MEMBER_OF',
      subject: { entity: ['PERSON'] },
      path: [{ relation: 'nmod', direction: 'down' }],
      object: { entity: ['ORGANIZATION'], token: { dependents: [{ relation: 'case', lemma: ['of', 'at', 'from'] }] } },
    },
    {
      name: 'org-in-place',
      relation: 'LOCATED_IN',
      subject: { entity: ['ORGANIZATION'] },
      path: [{ relation: 'nmod', direction: 'down' }],
      object: { entity: ['LOCATION'], token: { dependents: [{ relation: 'case', lemma: ['in', 'of'] }] } },
    },
    {
      name: 'person-from',
      relation: 'FROM',
      subject: { entity: ['PERSON'] },
      path: [{ relation: 'nmod', direction: 'down' }],
      object: { entity: ['LOCATION'], token: { dependents: [{ relation: 'case', lemma: ['from', 'of'] }] } },
    },
    {
      name: 'visited',
      relation: 'VISITED',
      subject: { entity: ['PERSON'] },
      path: [
        { relation: 'nsubj', direction: 'up', token: { lemma: ['visit', 'go', 'travel', 'come'], negated: false } },
        { relation: ['obj', 'obl'], direction: 'down' },
      ],
      object: { entity: ['LOCATION'] },
    },
    {
      name: 'said-about',
      relation: 'SPOKE_ABOUT',
      subject: { entity: ['PERSON'] },
      path: [
        { relation: 'nsubj', direction: 'up', token: { lemma: ['say', 'tell', 'speak', 'talk', 'announce'] } },
        { relation: ['obl', 'obj', 'ccomp'], direction: 'down' },
      ],
      object: { entity: ['ORGANIZATION', 'PERSON', 'LOCATION'] },
    },
  ],
};

// the documents: treebank documents (`# newdoc`), at most 20 sentences each
const data = testDataDir();
const conllu = parseConllu(readFileSync(join(data, 'ud-english-ewt', 'en_ewt-ud-dev.conllu'), 'utf8')).slice(0, SENTENCES);
const entities = new Map(parseIob(readFileSync(join(data, 'uner-english-ewt', 'en_ewt-ud-dev.iob2'), 'utf8')).map((sentence) => [sentence.sentId, sentence]));
const groups = [];
for (const sentence of conllu) {
  if (sentence.newDoc || groups.length === 0 || groups[groups.length - 1].length >= 20) groups.push([]);
  groups[groups.length - 1].push(sentence);
}
const documents = groups.map((group, index) => annotationFromConllu(group, { docId: `bench-${index}`, entities }));
const words = conllu.reduce((sum, sentence) => sum + sentence.words.length, 0);
const mentions = documents.reduce((sum, document) => sum + document.sentences.reduce((s, sentence) => s + sentence.entitymentions.length, 0), 0);

/** Runs inlet → component → sink over the messages; answers seconds from the first publish to the last arrival and the relations found. */
async function timed(component, messages, options = {}) {
  let relations = 0;
  const { seconds } = await runComponent(component, messages, (message) => (relations += message.body._relations?.length ?? 0), options);
  return { seconds, relations };
}

/** The in-process annotator of the skill: the pipeline without dictionary entries. */
function annotateWith(pipeline) {
  return (text, options) => pipeline.annotate(text, { annotators: options.annotators });
}

/** The annotation skill's sentences per second on the same documents' text, one request at a time (median of ROUNDS). */
async function annotationRate() {
  const texts = documents.map((document) =>
    document.sentences.map((sentence) => sentence.tokens.map((token) => token.before + token.originalText).join('')).join(' '),
  );
  const skill = await startSkillForTest(createAnnotationSkill({ annotator: annotateWith(new NlpPipeline()) }));
  const post = async (text) => {
    const response = await fetch(`${skill.url}/v2/annotate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text }),
    });
    if (response.status !== 200) throw new Error(`the annotation skill answered ${response.status}: ${await response.text()}`);
    await response.json();
  };
  try {
    for (const text of texts.slice(0, 5)) await post(text); // warm-up
    const rates = [];
    const perCpu = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const started = performance.now();
      const cpu = processCpuSeconds();
      for (const text of texts) await post(text);
      rates.push(conllu.length / ((performance.now() - started) / 1000));
      perCpu.push(conllu.length / (processCpuSeconds() - cpu));
    }
    return { rate: median(rates), perCpu: median(perCpu) };
  } finally {
    await skill.stop();
  }
}

/** ROUNDS rounds of write, evaluate and the plain-node baseline on one backend; prints each and the medians. */
async function measureBackend(backend, annotation) {
  console.log(`\n${backend.name}:`);
  // warm-up: the server's code paths (and on AGE, PGlite's WebAssembly and the label tables), on a graph of its own;
  // BENCH_WARMUP passes of every document (default 3), so that a JIT-compiled server (Neo4j's JVM) is measured warm,
  // as a deployed one runs, not while its compiler threads still work
  for (let pass = 0; pass < WARMUP; pass++) {
    await backend.fresh();
    await timed(
      { ...instance(COMPONENT_KINDS.TOKEN_OCCURRENCE_WRITER, 'work'), resource: backend.resource(`warmup_${pass}`) },
      documents.map((document, i) => ({ id: `w${pass}-${i}`, body: { _annotation: document }, headers: {} })),
    );
  }
  const writes = [];
  const writeCpus = [];
  const singles = [];
  const evaluations = [];
  const baselines = [];
  for (let round = 1; round <= ROUNDS; round++) {
    await backend.fresh();
    const single = await timed(
      { ...instance(COMPONENT_KINDS.TOKEN_OCCURRENCE_WRITER, 'work'), resource: backend.resource(`relations_single_${round}`) },
      documents.map((document, i) => ({ id: `s${i}`, body: { _annotation: document }, headers: {} })),
      { oneAtATime: true },
    );
    await backend.fresh(); // Neo4j Community has one database: the counts below are of the batched write alone
    const graph = `relations_bench_${round}`;
    const helper = backend.resource(graph);
    const cpuBefore = backend.cpuSeconds();
    const write = await timed(
      { ...instance(COMPONENT_KINDS.TOKEN_OCCURRENCE_WRITER, 'work'), resource: helper },
      documents.map((document, i) => ({ id: `d${i}`, body: { _annotation: document }, headers: {} })),
    );
    const writeCpu = backend.cpuSeconds() - cpuBefore;
    const evaluate = EVALUATE
      ? await timed(
          { ...instance(COMPONENT_KINDS.RULE_BASED_RELATION_EXTRACTION, 'work', { rules: RULES }), resource: helper },
          documents.map((document, i) => ({ id: `e${i}`, body: { node_id: document.docId }, headers: {} })),
        )
      : { seconds: Number.NaN, relations: 0 };
    const plain = await plainNodes(backend, round);
    const stored = {
      sentences: await count(backend, graph, 'MATCH (s:Sentence) RETURN count(s) AS c'),
      tokens: await count(backend, graph, 'MATCH (t:TagOccurrence) RETURN count(t) AS c'),
      dependencies: await count(backend, graph, 'MATCH (:TagOccurrence)-[r]->(:TagOccurrence) RETURN count(r) AS c'),
    };
    writes.push(conllu.length / write.seconds);
    writeCpus.push(conllu.length / writeCpu);
    singles.push(conllu.length / single.seconds);
    evaluations.push(conllu.length / evaluate.seconds);
    baselines.push(conllu.length / plain.seconds);
    console.log(
      `  round ${round}: write ${write.seconds.toFixed(2)} s = ${(conllu.length / write.seconds).toFixed(1)} sentences/s ` +
        `(CPU ${writeCpu.toFixed(2)} s = ${(conllu.length / writeCpu).toFixed(1)} sentences per CPU second); ` +
        `one document per batch ${single.seconds.toFixed(2)} s = ${(conllu.length / single.seconds).toFixed(1)} sentences/s; ` +
        `evaluate ${evaluate.seconds.toFixed(2)} s = ${(conllu.length / evaluate.seconds).toFixed(1)} sentences/s (${evaluate.relations} relations); ` +
        `baseline plain nodes ${plain.seconds.toFixed(2)} s = ${(conllu.length / plain.seconds).toFixed(1)} sentences/s; ` +
        `stored ${stored.sentences} sentences, ${stored.tokens} tokens, ${stored.dependencies} dependencies (expected ${conllu.length}, ${words}, ${words})`,
    );
  }
  printMedians({ writes, writeCpus, singles, evaluations, baselines }, annotation);
}

/** The baseline of a round: the graph database writer storing each sentence as one plain node with its text. */
function plainNodes(backend, round) {
  return timed(
    {
      ...instance(COMPONENT_KINDS.GRAPH_DATABASE_WRITER, 'work', {
        query: 'CREATE (:PlainSentence {id: $id, text: $text})',
        batch_writes: true,
        batch_size: 20,
        aggregation_timeout: 50,
      }),
      resource: backend.resource(`plain_bench_${round}`),
    },
    documents.flatMap((document) =>
      document.sentences.map((sentence) => ({
        id: `${document.docId}-${sentence.index}`,
        body: { id: `${document.docId}-${sentence.index}`, text: sentence.tokens.map((token) => token.before + token.originalText).join('') },
        headers: {},
      })),
    ),
  );
}

/** Prints the medians of a backend's rounds and their ratios to the annotation skill and to the plain-node baseline. */
function printMedians(rounds, annotation) {
  const write = median(rounds.writes);
  const writeCpu = median(rounds.writeCpus);
  const writeSingle = median(rounds.singles);
  const evaluate = median(rounds.evaluations);
  const baseline = median(rounds.baselines);
  const both = 1 / (1 / write + 1 / evaluate);
  console.log(
    `  median of ${ROUNDS}: Token Occurrence Writer ${write.toFixed(1)} sentences/s (one document per batch ${writeSingle.toFixed(1)}); ` +
      `${RULES.rules.length}-rule evaluation ${evaluate.toFixed(1)} sentences/s; both in sequence ${both.toFixed(1)} sentences/s`,
  );
  console.log(
    `  against the annotation skill (${annotation.rate.toFixed(1)} sentences/s): write ${(write / annotation.rate).toFixed(2)}x (one document per batch ${(writeSingle / annotation.rate).toFixed(2)}x), ` +
      `evaluate ${(evaluate / annotation.rate).toFixed(2)}x, write+evaluate ${(both / annotation.rate).toFixed(2)}x`,
  );
  console.log(
    `  per CPU second: Token Occurrence Writer ${writeCpu.toFixed(1)} sentences, annotation skill ${annotation.perCpu.toFixed(1)}: write ${(writeCpu / annotation.perCpu).toFixed(2)}x`,
  );
  console.log(
    `  baseline (graph writer, one plain node per sentence): ${baseline.toFixed(1)} sentences/s; token graph write / baseline = ${(write / baseline).toFixed(2)}x, write+evaluate / baseline = ${(both / baseline).toFixed(2)}x`,
  );
}

console.log(
  `${conllu.length} EWT dev sentences (${words} words, ${mentions} UNER entities) in ${documents.length} documents; ${RULES.rules.length} rules; ${ROUNDS} rounds`,
);
const annotation = await annotationRate();
console.log(
  `annotation skill (HTTP on loopback, one request at a time, the same documents' text): ${annotation.rate.toFixed(1)} sentences/s, ${annotation.perCpu.toFixed(1)} per CPU second (medians)`,
);
for (const open of [...(ONLY === 'neo4j' ? [] : [ageBackend]), ...(ONLY === 'age' ? [] : [neo4jBackend])]) {
  const backend = await open();
  try {
    await measureBackend(backend, annotation);
  } finally {
    await backend.close();
  }
}
process.exit(0);
