import { readFileSync, writeFileSync } from 'node:fs';
import { findDataDir } from './data-dir.js';
import { entityCardFigures, formatEntityScores } from './entity-scores.js';
import { evaluate, type Evaluation } from './evaluate.js';
import { cardPath, readCard, defaultModelsDir, NlpPipeline } from '@loom/nlp';

/** The committed models, in training order. */
export const MODELS = ['tokenizer', 'tagger', 'lemmatizer', 'parser', 'ner'] as const;

/** The figures compared between an evaluation run and the cards (name → [measured, card]). */
export function compareWithCards(result: Evaluation, cards: Record<string, Record<string, number>>): { name: string; measured: number; card: number }[] {
  const out: { name: string; measured: number; card: number }[] = [];
  for (const [name, value] of Object.entries(measuredFigures(result))) {
    const [model, field] = name.split('.') as [string, string];
    const card = cards[model]?.[field];
    if (card !== undefined) out.push({ name, measured: value, card });
  }
  return out;
}

/** The figures an evaluation yields, keyed `model.field` as the cards hold them. */
export function measuredFigures(result: Evaluation): Record<string, number> {
  return {
    'tokenizer.tokensF1': result.raw.tokensF1,
    'tokenizer.wordsF1': result.raw.wordsF1,
    'tokenizer.sentencesF1': result.raw.sentencesF1,
    'tagger.upos': result.gold.upos,
    'tagger.xpos': result.gold.xpos,
    'lemmatizer.lemma': result.gold.lemma,
    'parser.uas': result.gold.uas,
    'parser.las': result.gold.las,
    'parser.lasRaw': result.raw.lasF1,
    ...Object.fromEntries(Object.entries(entityCardFigures(result.ner)).map(([name, value]) => [`ner.${name}`, value])),
  };
}

/** Options of the `eval nlp` command. */
export interface EvalOptions {
  /** Evaluate on the first N dev sentences (and N held-out UNER sentences) and compare with the cards' devSample. */
  readonly sample?: number;
  /** Write the figures into the cards (devSample with a sample, dev without) instead of comparing. */
  readonly record?: boolean;
  readonly modelsDir?: string;
  /** The data directory holding EWT dev and UNER dev; `findDataDir()` when not given. */
  readonly dataDir?: string;
  readonly print: (line: string) => void;
}

/** Runs the evaluation, prints its figures, and returns 1 when a figure is more than 1 point under its card. */
export function evalNlp(options: EvalOptions): number {
  const { sample, record } = options;
  const modelsDir = options.modelsDir ?? defaultModelsDir();
  const pipeline = new NlpPipeline({ modelsDir });
  const loadStart = performance.now();
  const loadCpu = process.cpuUsage();
  pipeline.loadAll();
  const loadSeconds = (performance.now() - loadStart) / 1000;
  const loadCpuSeconds = (process.cpuUsage(loadCpu).user + process.cpuUsage(loadCpu).system) / 1e6;
  const result = evaluate(pipeline, options.dataDir ?? findDataDir(), sample);
  const rssMb = process.memoryUsage().rss / 2 ** 20;
  const fixed = (value: number): string => value.toFixed(2);
  options.print(`EWT dev${sample === undefined ? '' : ` sample (first ${sample} sentences)`}: ${result.devSentences} sentences`);
  options.print(
    `raw text:    tokens F1 ${fixed(result.raw.tokensF1)}  words F1 ${fixed(result.raw.wordsF1)}  sentences F1 ${fixed(result.raw.sentencesF1)}  LAS F1 ${fixed(result.raw.lasF1)}`,
  );
  options.print(
    `gold tokens: UPOS ${fixed(result.gold.upos)}  XPOS ${fixed(result.gold.xpos)}  lemma ${fixed(result.gold.lemma)}  UAS ${fixed(result.gold.uas)}  LAS ${fixed(result.gold.las)}`,
  );
  options.print(`NER (held-out UNER documents, exact spans, precision / recall / F1): ${formatEntityScores(result.ner)}`);
  options.print(`NER, each sentence alone (as measured before issue 54's document consistency): ${formatEntityScores(result.nerSentences)}`);
  options.print(
    `speed: ${result.speed.words} words, ${Math.round(result.speed.wordsPerCpuSecond)} words per CPU second (${Math.round(result.speed.wordsPerWallSecond)} per wall second on this shared machine); models load in ${fixed(loadSeconds)} s (${fixed(loadCpuSeconds)} CPU s); RSS ${Math.round(rssMb)} MB`,
  );
  const key = sample === undefined ? 'dev' : 'devSample';
  const cards = Object.fromEntries(
    MODELS.map((model) => [model, (readCard(modelsDir, model) as unknown as Record<string, Record<string, number> | undefined>)[key] ?? {}]),
  );
  if (record) {
    for (const model of MODELS) {
      const path = cardPath(modelsDir, model);
      const card = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
      const mine = Object.entries(measuredFigures(result))
        .filter(([name]) => name.startsWith(`${model}.`))
        .map(([name, value]) => [name.slice(model.length + 1), Math.round(value * 100) / 100]);
      card[key] = { ...(card[key] as object | undefined), ...(sample === undefined ? {} : { sentences: sample }), ...Object.fromEntries(mine) };
      writeFileSync(path, `${JSON.stringify(card, null, 2)}\n`);
    }
    options.print(`recorded the figures in the cards' ${key}`);
    return 0;
  }
  // Card figures of another sample size are not comparable.
  for (const [model, figures] of Object.entries(cards)) {
    if (sample !== undefined && figures['sentences'] !== sample) {
      options.print(`${model}: its card has no figures for a ${sample}-sentence sample; not compared`);
      cards[model] = {};
    }
  }
  let failed = 0;
  for (const comparison of compareWithCards(result, cards)) {
    const under = comparison.card - comparison.measured;
    if (under > 1) {
      failed++;
      options.print(`FAIL ${comparison.name}: ${fixed(comparison.measured)} is ${fixed(under)} points under the card's ${fixed(comparison.card)}`);
    }
  }
  return failed === 0 ? 0 : 1;
}
