import type { ConlluSentence } from './conllu.js';
import { readEwt, EWT_DEV } from './ewt.js';
import { entitySpans } from './iob.js';
import { unerSplit } from './ner-data.js';
import type { NlpPipeline } from './pipeline.js';
import { segmentText, type SplitterModel } from './sentences.js';
import { rawText } from './tokenizer-training.js';
import type { TokenizerLexicon, Word } from './tokenizer.js';

/** A gold word of raw-text evaluation: its alignment key, sentence, head and relation. */
interface GoldWord {
  readonly key: string;
  readonly sentence: number;
  readonly id: number;
  readonly head: number;
  readonly deprel: string;
}

function f1(tp: number, predicted: number, gold: number): number {
  return predicted + gold === 0 ? 0 : (200 * tp) / (predicted + gold);
}

/** Gold words of the raw text with character-offset keys (a multi-word token's parts by their slices when they spell it). */
function goldWords(sentences: readonly ConlluSentence[], raw: ReturnType<typeof rawText>): GoldWord[][] {
  const out: GoldWord[][] = sentences.map(() => []);
  for (const t of raw.tokens) {
    const s = sentences[t.sentence]!;
    const words = s.words.slice(t.first - 1, t.last);
    const spells =
      words
        .map((w) => w.form)
        .join('')
        .toLowerCase() === raw.text.slice(t.start, t.end).toLowerCase();
    let at = t.start;
    words.forEach((w, k) => {
      const key = spells ? `${at}:${at + w.form.length}` : `${t.start}:${t.end}#${k}`;
      at += w.form.length;
      out[t.sentence]!.push({ key, sentence: t.sentence, id: w.id, head: w.head, deprel: w.deprel });
    });
  }
  return out;
}

/** Tokens, words and sentences F1 (%) of segmenting the raw text of treebank sentences. */
export function segmentationScores(
  lexicon: TokenizerLexicon,
  splitter: SplitterModel,
  sentences: readonly ConlluSentence[],
): { tokens: number; words: number; sentences: number } {
  const raw = rawText(sentences);
  return scoreSegmentation(sentences, raw, segmentText(raw.text, lexicon, splitter));
}

function scoreSegmentation(
  sentences: readonly ConlluSentence[],
  raw: ReturnType<typeof rawText>,
  predicted: readonly (readonly Word[])[],
): { tokens: number; words: number; sentences: number } {
  const goldTokens = new Set(raw.tokens.map((t) => `${t.start}:${t.end}`));
  const predTokens = new Set<string>();
  const predWords: string[] = [];
  const predSentences = new Set<string>();
  for (const words of predicted) {
    const byToken = new Map<number, Word[]>();
    for (const w of words) {
      const list = byToken.get(w.token) ?? [];
      list.push(w);
      byToken.set(w.token, list);
      predWords.push(`${w.start}:${w.end}`);
    }
    for (const list of byToken.values()) predTokens.add(`${list[0]!.start}:${list[list.length - 1]!.end}`);
    if (words.length > 0) predSentences.add(`${words[0]!.start}:${words[words.length - 1]!.end}`);
  }
  const gold = goldWords(sentences, raw);
  const goldWordKeys = new Set(gold.flat().map((w) => w.key));
  const goldSentences = new Set<string>();
  let first = 0;
  raw.tokens.forEach((t, i) => {
    const next = raw.tokens[i + 1];
    if (!next || next.sentence !== t.sentence) {
      goldSentences.add(`${raw.tokens[first]!.start}:${t.end}`);
      first = i + 1;
    }
  });
  const hits = (pred: Iterable<string>, goldSet: ReadonlySet<string>): number => {
    let n = 0;
    for (const k of pred) if (goldSet.has(k)) n++;
    return n;
  };
  return {
    tokens: f1(hits(predTokens, goldTokens), predTokens.size, goldTokens.size),
    words: f1(hits(predWords, goldWordKeys), predWords.length, goldWordKeys.size),
    sentences: f1(hits(predSentences, goldSentences), predSentences.size, goldSentences.size),
  };
}

/** Every figure of `npm run eval -- nlp` (percentages, seconds, megabytes). */
export interface Evaluation {
  readonly devSentences: number;
  readonly raw: { tokensF1: number; wordsF1: number; sentencesF1: number; lasF1: number };
  readonly gold: { upos: number; xpos: number; lemma: number; uas: number; las: number };
  readonly ner: Record<string, number>;
  readonly speed: { words: number; cpuSeconds: number; wallSeconds: number; wordsPerCpuSecond: number; wordsPerWallSecond: number };
}

/** Evaluates a pipeline on EWT dev (the first `sample` sentences when given) and held-out UNER documents. */
export function evaluate(pipeline: NlpPipeline, dataDir: string, sample?: number): Evaluation {
  const all = readEwt(dataDir, EWT_DEV);
  const dev = sample === undefined ? all : all.slice(0, sample);
  // gold tokens
  let upos = 0;
  let xpos = 0;
  let lemma = 0;
  let uas = 0;
  let las = 0;
  let n = 0;
  for (const s of dev) {
    const forms = s.words.map((w) => w.form);
    const tags = pipeline.tag(forms);
    const parsed = pipeline.parseWords(
      forms,
      tags.map((t) => t.label),
    );
    s.words.forEach((w, i) => {
      n++;
      const t = tags[i]!;
      if (t.upos === w.upos) upos++;
      if (t.xpos === w.xpos) xpos++;
      if (pipeline.lemma(w.form, t.xpos) === w.lemma) lemma++;
      if (parsed.heads[i] === w.head) {
        uas++;
        if (parsed.relations[i] === w.deprel) las++;
      }
    });
  }
  // raw text
  const raw = rawText(dev);
  const cpu0 = process.cpuUsage();
  const wall0 = performance.now();
  const annotation = pipeline.annotate(raw.text);
  const cpu = process.cpuUsage(cpu0);
  const wallSeconds = (performance.now() - wall0) / 1000;
  const cpuSeconds = (cpu.user + cpu.system) / 1e6;
  // The annotation does not say which words share a surface token, so segmentation is scored on the segmenter's own output.
  const predicted = pipeline.segment(raw.text);
  const segmentation = scoreSegmentation(dev, raw, predicted);
  const gold = goldWords(dev, raw);
  const goldByKey = new Map(gold.flat().map((w) => [w.key, w]));
  let correct = 0;
  let predictedWords = 0;
  for (const s of annotation.sentences) {
    const keys = s.tokens.map((t) => `${t.characterOffsetBegin}:${t.characterOffsetEnd}`);
    for (const arc of s.basicDependencies ?? []) {
      predictedWords++;
      const g = goldByKey.get(keys[arc.dependent - 1]!);
      if (!g) continue;
      const relation = arc.dep === 'ROOT' ? 'root' : arc.dep;
      if (relation !== g.deprel) continue;
      if (arc.governor === 0 ? g.head === 0 : g.head !== 0 && goldByKey.get(keys[arc.governor - 1]!) === gold[g.sentence]![g.head - 1]) correct++;
    }
  }
  const words = annotation.sentences.reduce((sum, s) => sum + s.tokens.length, 0);
  // NER on held-out UNER documents
  const heldOut = unerSplit(dataDir).heldOut;
  const nerSample = sample === undefined ? heldOut : heldOut.slice(0, sample);
  const counts = new Map<string, { tp: number; p: number; g: number }>();
  const bump = (type: string, field: 'tp' | 'p' | 'g'): void => {
    const c = counts.get(type) ?? { tp: 0, p: 0, g: 0 };
    c[field]++;
    counts.set(type, c);
  };
  const typeOf: Record<string, string> = { PERSON: 'PER', ORGANIZATION: 'ORG', LOCATION: 'LOC' };
  for (const s of nerSample) {
    const types = pipeline.entities(s.tokens);
    const tags = types.map((t, i) => (t === 'O' ? 'O' : `${types[i - 1] === t ? 'I' : 'B'}-${typeOf[t] ?? t}`));
    const goldSpans = entitySpans(s.tags);
    const goldKeys = new Set(goldSpans.map((g) => `${g.start}:${g.end}:${g.type}`));
    for (const g of goldSpans) bump(g.type, 'g');
    for (const p of entitySpans(tags)) {
      bump(p.type, 'p');
      if (goldKeys.has(`${p.start}:${p.end}:${p.type}`)) bump(p.type, 'tp');
    }
  }
  const ner: Record<string, number> = {};
  const total = { tp: 0, p: 0, g: 0 };
  for (const [type, c] of [...counts].sort()) {
    ner[type] = f1(c.tp, c.p, c.g);
    total.tp += c.tp;
    total.p += c.p;
    total.g += c.g;
  }
  ner['micro'] = f1(total.tp, total.p, total.g);
  const goldCount = gold.flat().length;
  return {
    devSentences: dev.length,
    raw: { tokensF1: segmentation.tokens, wordsF1: segmentation.words, sentencesF1: segmentation.sentences, lasF1: f1(correct, predictedWords, goldCount) },
    gold: { upos: (100 * upos) / n, xpos: (100 * xpos) / n, lemma: (100 * lemma) / n, uas: (100 * uas) / n, las: (100 * las) / n },
    ner,
    speed: { words, cpuSeconds, wallSeconds, wordsPerCpuSecond: words / cpuSeconds, wordsPerWallSecond: words / wallSeconds },
  };
}
