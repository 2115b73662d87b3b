// Entities of the NLP pipeline against a baseline build, in the same process (issue 54): the figures of
// `npm run eval -- nlp` (held-out UNER NER precision / recall / F1 by type, UPOS and LAS on EWT dev, words per CPU
// second annotating EWT dev's raw text) for this build and for the baseline's, and how many entity ends of the
// hand-marked relations (bench/data/relations-dev.jsonl) each finds exactly. Development data only.
//   LOOM_NLP_DATA_DIR   the NLP data directory (as for `npm run eval -- nlp`); without it the benchmark says so and
//                       measures nothing.
//   BENCH_BASELINE_NLP  another checkout's libs/nlp/dist/index.js (built), the baseline; without it only this build
//                       is measured.
//   BENCH_BASELINE_MODELS the baseline's models directory (its checkout's libs/nlp/models) when this build's models
//                       were retrained; without it the baseline runs on this checkout's models.
// Each build is evaluated BENCH_ROUNDS times (3), alternating; speed is the median; nothing passes or fails.
import { existsSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { NlpPipeline } from '@loom/nlp';
import { evaluate } from '@loom/nlp-training';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const dataDir = process.env.LOOM_NLP_DATA_DIR;
const baselinePath = process.env.BENCH_BASELINE_NLP ?? '';
const here = dirname(fileURLToPath(import.meta.url));

if (!dataDir || !existsSync(join(dataDir, 'uner-english-ewt'))) {
  console.log('nlp-entities: LOOM_NLP_DATA_DIR is not set or has no uner-english-ewt/: nothing measured');
  process.exit(0);
}

const builds = [{ name: 'this build', pipeline: new NlpPipeline() }];
if (baselinePath !== '') {
  const baseline = await import(pathToFileURL(resolve(baselinePath)).href);
  // the committed models of this checkout, so that only the code differs, unless BENCH_BASELINE_MODELS names the
  // baseline's own (a retrained model another build cannot read as this one does)
  const pipeline = new baseline.NlpPipeline({ modelsDir: process.env.BENCH_BASELINE_MODELS || builds[0].pipeline.modelsDir });
  // a build from before documentEntities (issue 54) tags each sentence of a document alone
  pipeline.documentEntities ??= (sentences) => sentences.map((words) => pipeline.entities(words));
  builds.push({ name: 'baseline', pipeline });
} else console.log('nlp-entities: BENCH_BASELINE_NLP is not set: no baseline measured');
for (const build of builds) build.pipeline.loadAll();

const relations = readFileSync(join(here, 'data', 'relations-dev.jsonl'), 'utf8')
  .trim()
  .split('\n')
  .map((line) => JSON.parse(line));

/** How many of the relations' distinct ends a pipeline finds as a mention with the same offsets and type. */
function exactEnds(pipeline) {
  let found = 0;
  let total = 0;
  for (const { text, relations: marked } of relations) {
    const mentions = pipeline.annotate(text, { annotators: 'tokenize,ssplit,pos,ner' }).sentences.flatMap((sentence) => sentence.entitymentions ?? []);
    const ends = new Map();
    for (const relation of marked) for (const end of [relation.subject, relation.object]) ends.set(`${end.start}:${end.end}`, end);
    for (const end of ends.values()) {
      total++;
      if (mentions.some((mention) => mention.characterOffsetBegin === end.start && mention.characterOffsetEnd === end.end && mention.ner === end.type)) found++;
    }
  }
  return { found, total };
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const fixed = (value) => value.toFixed(2);

console.log(`load average before: ${loadavg().map(fixed).join(' ')}`);
const runs = new Map(builds.map((build) => [build.name, []]));
for (let round = 0; round < ROUNDS; round++) {
  for (const build of round % 2 === 0 ? builds : [...builds].reverse()) runs.get(build.name).push(evaluate(build.pipeline, dataDir));
}
const speeds = new Map();
for (const build of builds) {
  const [first] = runs.get(build.name);
  const { ner, nerSentences, gold } = first;
  const speed = median(runs.get(build.name).map((run) => run.speed.wordsPerCpuSecond));
  speeds.set(build.name, speed);
  const ends = exactEnds(build.pipeline);
  const type = (scores) => (name) => `${name} P ${fixed(scores[name].precision)} R ${fixed(scores[name].recall)} F1 ${fixed(scores[name].f1)}`;
  const types = (scores) => ['micro', 'PER', 'ORG', 'LOC'].map(type(scores)).join('  ');
  console.log(
    `${build.name}: NER (held-out UNER documents) ${types(ner)}; each sentence alone ${types(nerSentences)}; UPOS ${fixed(gold.upos)} LAS ${fixed(gold.las)}; ` +
      `${Math.round(speed)} words per CPU second (median of ${ROUNDS}); relation ends found exactly ${ends.found} of ${ends.total}`,
  );
}
if (speeds.has('baseline')) console.log(`speed ratio this build / baseline: ${(speeds.get('this build') / speeds.get('baseline')).toFixed(3)}`);
console.log(`load average after: ${loadavg().map(fixed).join(' ')}`);
