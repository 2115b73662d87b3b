#!/usr/bin/env node
// `npm run eval -- relations`: the relations example's rule set against hand-marked relations in EWT dev sentences
// (bench/data/relations-dev.jsonl, see bench/data/README.md), through the real path: each sentence's raw text is
// annotated by loom's NLP pipeline (NlpPipeline of @loom/nlp, as the annotation skill does), stored by the Token
// Occurrence Writer and read by Rule Based Relation Extraction with the `rules` option of
// examples/relations.workflow.yaml as the file holds it when this runs; on the embedded graph (PGlite+AGE) and on
// Neo4j (the tests' launcher). Prints precision, recall and F1 per relation type and per class (affiliation,
// location), every miss with its cause (an end not recognised as an entity or recognised with another type, the ends
// in two sentences, found under another relation, or no rule reaching it) with the dependency path between its ends
// in the pipeline's parse (the steps a rule would take), each mark found only under another type of its class (a
// type-level miss), every false find, each rule's finds right and false, and the
// rule evaluation time per sentence on each backend (median of EVAL_ROUNDS rounds after a warm-up, each on a fresh
// graph).
// `--rules FILE` measures a rule set of a JSON file ({"rules": [...]}) instead, to try one before it goes into the
// example. `--age-only` skips Neo4j (scores and AGE time only: a quicker loop while writing rules). Builds what it
// imports first (`--no-build`: uses the packages' dist as they are, e.g. while another change leaves a build broken),
// and the Neo4j launcher when LOOM_NEO4J_LAUNCHER is not set.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const MARKS_FILE = join(here, 'data', 'relations-dev.jsonl');
const ROUNDS = Number(process.env.EVAL_ROUNDS ?? 3);

/** The class of a relation type a rule set names: the marks' types and the names a rule set is likely to use. */
function classOf(relation) {
  if (/(^|_)NOT_/.test(relation)) return undefined;
  if (/BASED|HEADQUARTER|LOCATED|LIVES|RESIDE|FROM|ORIGIN/.test(relation)) return 'location';
  if (/WORK|EMPLOY|LEAD|HEAD|RUN|FOUND|FUND|MEMBER|CEO|PRESIDENT|CHAIR|DIRECTOR|SPOKES|JOIN|AFFILIAT/.test(relation)) return 'affiliation';
  return undefined;
}

const overlaps = (a, b) => a.start < b.end && b.start < a.end;
const pairOverlaps = (found, marked) => overlaps(found.subject, marked.subject) && overlaps(found.object, marked.object);

/**
 * Matches the relations found in one sentence against its marks, both keyed by `keyOf` (a type or a class): each
 * mark is matched once; a find that matches an already matched mark (a second mention of the same place) is a
 * duplicate, neither right nor wrong. Answers the matched marks and the false finds.
 */
function matchSentence(found, marks, keyOf) {
  const matched = new Set();
  const falseFinds = [];
  for (const relation of found) {
    const key = keyOf(relation.relation);
    if (key === undefined) continue;
    const candidates = marks.filter((mark) => keyOf(mark.relation) === key && pairOverlaps(relation, mark));
    const free = candidates.find((mark) => !matched.has(mark));
    if (free !== undefined) matched.add(free);
    else if (candidates.length === 0) falseFinds.push(relation);
  }
  return { matched, falseFinds };
}

/** Precision, recall and F1 per key (relation type or class) over all sentences. */
function score(sentences, keyOf) {
  const counts = new Map();
  const at = (key) => counts.get(key) ?? counts.set(key, { right: 0, found: 0, marked: 0 }).get(key);
  for (const { marks, found } of sentences) {
    const { matched, falseFinds } = matchSentence(found, marks, keyOf);
    for (const mark of marks) at(keyOf(mark.relation)).marked += 1;
    for (const mark of matched) {
      at(keyOf(mark.relation)).right += 1;
      at(keyOf(mark.relation)).found += 1;
    }
    for (const relation of falseFinds) at(keyOf(relation.relation)).found += 1;
  }
  return counts;
}

function figures({ right, found, marked }) {
  const precision = found === 0 ? 0 : right / found;
  const recall = marked === 0 ? 0 : right / marked;
  const f1 = precision + recall === 0 ? 0 : (2 * precision * recall) / (precision + recall);
  return { precision, recall, f1 };
}

function printScores(title, counts) {
  console.log(`\n${title}:`);
  console.log('  type                 marked  found  right  precision  recall     F1');
  const total = { right: 0, found: 0, marked: 0 };
  for (const [key, count] of [...counts].sort(([a], [b]) => a.localeCompare(b))) {
    const { precision, recall, f1 } = figures(count);
    console.log(
      `  ${key.padEnd(20)} ${String(count.marked).padStart(6)} ${String(count.found).padStart(6)} ${String(count.right).padStart(6)}` +
        `  ${precision.toFixed(2).padStart(9)}  ${recall.toFixed(2).padStart(6)}  ${f1.toFixed(2).padStart(5)}`,
    );
    for (const field of Object.keys(total)) total[field] += count[field];
  }
  const { precision, recall, f1 } = figures(total);
  console.log(
    `  ${'all (micro)'.padEnd(20)} ${String(total.marked).padStart(6)} ${String(total.found).padStart(6)} ${String(total.right).padStart(6)}` +
      `  ${precision.toFixed(2).padStart(9)}  ${recall.toFixed(2).padStart(6)}  ${f1.toFixed(2).padStart(5)}`,
  );
}

/** The pipeline's entity mentions of a document, each with its sentence index. */
const mentionsOf = (annotation) =>
  annotation.sentences.flatMap((sentence) =>
    sentence.entitymentions.map((mention) => ({
      start: mention.characterOffsetBegin,
      end: mention.characterOffsetEnd,
      type: mention.ner,
      sentence: sentence.index,
    })),
  );

/** Why a mark was not found: an end the pipeline did not recognise or typed otherwise, else what the rules did. */
function causeOfMiss(mark, annotation, found) {
  const mentions = mentionsOf(annotation);
  const ends = [];
  for (const end of ['subject', 'object']) {
    const over = mentions.filter((mention) => overlaps(mention, mark[end]));
    if (over.length === 0) return { cause: 'entity missing', detail: `${end} '${mark[end].text}' is no entity` };
    const typed = over.find((mention) => mention.type === mark[end].type);
    if (typed === undefined) return { cause: 'entity of another type', detail: `${end} '${mark[end].text}' is ${over.map((m) => m.type).join('/')}` };
    ends.push(typed);
  }
  if (ends[0].sentence !== ends[1].sentence) return { cause: 'ends in two sentences', detail: 'the pipeline split the sentence between them' };
  const other = found.find((relation) => pairOverlaps(relation, mark));
  if (other !== undefined) return { cause: 'found as another relation', detail: `${other.relation} (rule ${other.rule})` };
  return { cause: 'no rule reached', detail: 'both ends recognised with their types' };
}

const describe = (relation) => `${relation.relation}(${relation.subject.text} → ${relation.object.text})`;

/**
 * Per rule of the set: its finds, those that overlap a mark of their class (right, or a second find of a mark another
 * find matched) and those that overlap none (false); a rule that found nothing is listed with zeros.
 */
function printPerRule(sentences, ruleNames) {
  const counts = new Map(ruleNames.map((name) => [name, { found: 0, right: 0, wrong: 0 }]));
  for (const { marks, found } of sentences) {
    for (const relation of found) {
      const key = classOf(relation.relation);
      if (key === undefined) continue;
      const count = counts.get(relation.rule) ?? counts.set(relation.rule, { found: 0, right: 0, wrong: 0 }).get(relation.rule);
      count.found += 1;
      if (marks.some((mark) => classOf(mark.relation) === key && pairOverlaps(relation, mark))) count.right += 1;
      else count.wrong += 1;
    }
  }
  console.log('\nper rule (class level; right: overlaps a mark of its class, also when another find matched it first):');
  console.log('  rule                                  found  right  false');
  for (const [name, { found, right, wrong }] of counts) {
    console.log(`  ${name.padEnd(36)} ${String(found).padStart(6)} ${String(right).padStart(6)} ${String(wrong).padStart(6)}`);
  }
}

/** A token as a path shows it: its text, UPOS, and its lemma when that differs from the text. */
const tokenLabel = (token) => `${token.word}/${token.upos}${token.lemma.toLowerCase() === token.word.toLowerCase() ? '' : `/${token.lemma}`}`;

/**
 * The shortest dependency path in the pipeline's parse from a token of a mark's subject to a token of its object, in
 * the rule language's terms (`↑nsubj` a step up to the head by nsubj, `↓obl` a step down to a dependent): the path a
 * rule would have to take. Undefined when the ends are not in one sentence.
 */
function pathBetween(mark, annotation) {
  for (const sentence of annotation.sentences) {
    const tokensIn = (span) => sentence.tokens.filter((token) => token.characterOffsetBegin < span.end && span.start < token.characterOffsetEnd);
    const starts = tokensIn(mark.subject).map((token) => token.index);
    const ends = new Set(tokensIn(mark.object).map((token) => token.index));
    if (starts.length === 0 || ends.size === 0) continue;
    const edges = new Map(sentence.tokens.map((token) => [token.index, []]));
    for (const { dep, governor, dependent } of sentence.basicDependencies) {
      if (governor === 0) continue;
      edges.get(dependent).push({ to: governor, step: `↑${dep}` });
      edges.get(governor).push({ to: dependent, step: `↓${dep}` });
    }
    // breadth first from every subject token: the tree has one path between two tokens, the nearest pair wins
    const cameFrom = new Map(starts.map((index) => [index, undefined]));
    const queue = [...starts];
    while (queue.length > 0) {
      const at = queue.shift();
      if (ends.has(at)) {
        const parts = [tokenLabel(sentence.tokens[at - 1])];
        for (let back = cameFrom.get(at); back !== undefined; back = cameFrom.get(back.from)) {
          parts.unshift(tokenLabel(sentence.tokens[back.from - 1]), back.step);
        }
        return parts.join(' ');
      }
      for (const { to, step } of edges.get(at)) {
        if (cameFrom.has(to)) continue;
        cameFrom.set(to, { from: at, step });
        queue.push(to);
      }
    }
  }
  return undefined;
}

/** Every mark a find of its class matched but none of its type, with the finds of its class that name another type. */
function otherTypeLines(sentences) {
  const lines = [];
  for (const { sentId, marks, found } of sentences) {
    const byClass = matchSentence(found, marks, classOf).matched;
    const byType = matchSentence(found, marks, (relation) => relation).matched;
    for (const mark of marks.filter((candidate) => byClass.has(candidate) && !byType.has(candidate))) {
      const finds = found.filter((relation) => classOf(relation.relation) === classOf(mark.relation) && pairOverlaps(relation, mark));
      lines.push(`  ${sentId}: ${describe(mark)}: found as ${finds.map((relation) => `${relation.relation} (rule ${relation.rule})`).join(', ')}`);
    }
  }
  return lines;
}

/** Every mark that no find of its class matched, with its cause; every find of a class that matched no mark. */
function printMissesAndFalseFinds(sentences, heldOut) {
  const causes = new Map();
  const lines = [];
  const falseLines = [];
  for (const { sentId, marks, found, annotation } of sentences) {
    const { matched, falseFinds } = matchSentence(found, marks, classOf);
    for (const mark of marks.filter((candidate) => !matched.has(candidate))) {
      const { cause, detail } = causeOfMiss(mark, annotation, found);
      const count = causes.get(cause) ?? { all: 0, heldOut: 0 };
      count.all += 1;
      if (heldOut.has(sentId)) count.heldOut += 1;
      causes.set(cause, count);
      lines.push(`  ${sentId}: ${describe(mark)}: ${cause} (${detail})`);
      const path = pathBetween(mark, annotation);
      if (path !== undefined) lines.push(`      path: ${path}`);
    }
    for (const relation of falseFinds) falseLines.push(`  ${sentId}: ${describe(relation)} by rule ${relation.rule}`);
    const outside = found.filter((relation) => classOf(relation.relation) === undefined);
    for (const relation of outside) falseLines.push(`  ${sentId}: ${describe(relation)} by rule ${relation.rule} (outside both classes, not scored)`);
  }
  console.log(`\nmisses by cause (class level; in brackets: of them in sentences the NER model never trained on):`);
  for (const [cause, count] of [...causes].sort((a, b) => b[1].all - a[1].all)) console.log(`  ${cause}: ${count.all} (${count.heldOut})`);
  console.log(`\nmisses:\n${lines.join('\n') || '  none'}`);
  console.log(
    `\nfound in their class under another type (type-level misses the class level counts right):\n${otherTypeLines(sentences).join('\n') || '  none'}`,
  );
  console.log(`\nfalse finds:\n${falseLines.join('\n') || '  none'}`);
}

function build() {
  const built = spawnSync('npx', ['nx', 'run-many', '-t', 'build', '-p', 'executor,nlp,nlp-training,testing', '--output-style=stream'], {
    stdio: ['ignore', 'ignore', 'inherit'],
    cwd: join(here, '..'),
  });
  if (built.status !== 0) process.exit(built.status ?? 1);
}

const ageOnly = process.argv.includes('--age-only');
if (!process.argv.includes('--no-build')) build();
if (!ageOnly && process.env.LOOM_NEO4J_LAUNCHER === undefined) {
  const { ensureNeo4j } = await import('../scripts/test-env/neo4j.mjs');
  Object.assign(process.env, await ensureNeo4j());
}
const { COMPONENT_KINDS, componentInstance: instance } = await import('@loom/domain');
const { NlpPipeline } = await import('@loom/nlp');
const { testDataDir, unerSplit } = await import('@loom/nlp-training');
const { ageBackend, EXAMPLE_FILE, exampleRulesOption, median, neo4jBackend, runComponent } = await import('./relations-run.mjs');

const marked = readFileSync(MARKS_FILE, 'utf8')
  .split('\n')
  .filter((line) => line.trim() !== '')
  .map((line) => JSON.parse(line));
const rulesAt = process.argv.indexOf('--rules');
const rulesFile = rulesAt < 0 ? undefined : process.argv[rulesAt + 1];
const rules = rulesFile === undefined ? exampleRulesOption() : JSON.parse(readFileSync(rulesFile, 'utf8'));
const pipeline = new NlpPipeline();
const documents = marked.map((sentence, index) => ({
  ...sentence,
  docId: `relations-eval-${index}`,
  annotation: pipeline.annotate(sentence.text, { docId: `relations-eval-${index}` }),
}));
// UNER dev is partly the NER model's training data: a quarter of its documents are held out (libs/nlp-training ner-data.ts)
const heldOut = new Set(unerSplit(testDataDir()).heldOut.map((sentence) => sentence.sentId));

/** Writes the documents' token graphs into a fresh graph and evaluates the rules on it; answers the seconds and the relations found per document. */
async function writeAndEvaluate(backend, graph) {
  const resource = backend.resource(graph);
  await runComponent(
    { ...instance(COMPONENT_KINDS.TOKEN_OCCURRENCE_WRITER, 'work'), resource },
    documents.map((document) => ({ id: document.docId, body: { _annotation: document.annotation }, headers: {} })),
  );
  const found = new Map();
  const { seconds } = await runComponent(
    { ...instance(COMPONENT_KINDS.RULE_BASED_RELATION_EXTRACTION, 'work', { rules }), resource },
    documents.map((document) => ({ id: document.docId, body: { node_id: document.docId }, headers: {} })),
    (message) => found.set(message.body.node_id, message.body._relations ?? []),
  );
  return { seconds, found };
}

/** A warm-up, then ROUNDS rounds on fresh graphs; answers the median seconds per sentence and the last round's relations. */
async function measure(open) {
  const backend = await open();
  try {
    await backend.fresh();
    await writeAndEvaluate(backend, 'relations_eval_warmup');
    const seconds = [];
    let found;
    for (let round = 1; round <= ROUNDS; round++) {
      await backend.fresh();
      const result = await writeAndEvaluate(backend, `relations_eval_${round}`);
      seconds.push(result.seconds);
      found = result.found;
    }
    return { name: backend.name, perSentence: median(seconds) / documents.length, found };
  } finally {
    await backend.close();
  }
}

const relationsMarked = marked.reduce((sum, sentence) => sum + sentence.relations.length, 0);
console.log(
  `${marked.length} hand-marked EWT dev sentences (${marked.filter((sentence) => sentence.relations.length > 0).length} with relations, ` +
    `${relationsMarked} relations; ${marked.filter((sentence) => heldOut.has(sentence.sentId)).length} sentences the NER model never trained on); ` +
    `${rules.rules?.length ?? '?'} rules of ${rulesFile ?? EXAMPLE_FILE.slice(join(here, '..').length + 1)}; ${ROUNDS} rounds`,
);
const results = [];
for (const open of ageOnly ? [ageBackend] : [ageBackend, neo4jBackend]) results.push(await measure(open));
for (const result of results) {
  console.log(
    `rule evaluation on ${result.name}: ${(result.perSentence * 1000).toFixed(1)} ms per sentence (median of ${ROUNDS} rounds, all rules, one message per sentence)`,
  );
}
const [age, neo4j] = results;
if (neo4j !== undefined) {
  const same = documents.every((document) => JSON.stringify(age.found.get(document.docId)) === JSON.stringify(neo4j.found.get(document.docId)));
  console.log(same ? 'AGE and Neo4j found the same relations' : 'AGE and Neo4j found different relations: the scores below are those of AGE');
}

const sentences = documents.map((document) => ({
  sentId: document.sentId,
  marks: document.relations,
  found: age.found.get(document.docId) ?? [],
  annotation: document.annotation,
}));
printScores(
  'per relation type (a find counts for the type it names)',
  score(sentences, (relation) => relation),
);
printScores('per class (affiliation, location; a find counts for the class of the type it names)', score(sentences, classOf));
printPerRule(
  sentences,
  (rules.rules ?? []).map((rule) => rule.name),
);
printMissesAndFalseFinds(sentences, heldOut);
process.exit(0);
