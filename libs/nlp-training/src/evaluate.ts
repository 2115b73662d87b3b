import type { Annotation } from '@loom/domain';
import { itemAt, type NlpPipeline, segmentText, type SplitterModel, type TokenizerLexicon, type Word } from '@loom/nlp';
import type { ConlluSentence } from './conllu.js';
import { readEwt, EWT_DEV } from './ewt.js';
import { entityScores, tagsOfWordTypes, type EntityScores } from './entity-scores.js';
import type { IobSentence } from './iob.js';
import { unerDocuments, unerSplit } from './ner-data.js';
import { rawText } from './tokenizer-training.js';

/** A gold word of raw-text evaluation: its alignment key, sentence, head and relation. */
interface GoldWord {
  readonly key: string;
  readonly sentence: number;
  readonly id: number;
  readonly head: number;
  readonly deprel: string;
}

function f1(truePositives: number, predicted: number, gold: number): number {
  return predicted + gold === 0 ? 0 : (200 * truePositives) / (predicted + gold);
}

/** Gold words of the raw text with character-offset keys (a multi-word token's parts by their slices when they spell it). */
function goldWords(sentences: readonly ConlluSentence[], raw: ReturnType<typeof rawText>): GoldWord[][] {
  const out: GoldWord[][] = sentences.map(() => []);
  for (const token of raw.tokens) {
    const sentence = itemAt(sentences, token.sentence, 'sentences');
    const words = sentence.words.slice(token.first - 1, token.last);
    const spells =
      words
        .map((word) => word.form)
        .join('')
        .toLowerCase() === raw.text.slice(token.start, token.end).toLowerCase();
    let at = token.start;
    words.forEach((word, part) => {
      const key = spells ? `${at}:${at + word.form.length}` : `${token.start}:${token.end}#${part}`;
      at += word.form.length;
      itemAt(out, token.sentence, 'out').push({ key, sentence: token.sentence, id: word.id, head: word.head, deprel: word.deprel });
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
  const goldTokens = new Set(raw.tokens.map((token) => `${token.start}:${token.end}`));
  const predTokens = new Set<string>();
  const predWords: string[] = [];
  const predSentences = new Set<string>();
  for (const words of predicted) {
    const byToken = new Map<number, Word[]>();
    for (const word of words) {
      const list = byToken.get(word.token) ?? [];
      list.push(word);
      byToken.set(word.token, list);
      predWords.push(`${word.start}:${word.end}`);
    }
    for (const list of byToken.values()) predTokens.add(`${itemAt(list, 0, 'list').start}:${itemAt(list, list.length - 1, 'list').end}`);
    if (words.length > 0) predSentences.add(`${itemAt(words, 0, 'words').start}:${itemAt(words, words.length - 1, 'words').end}`);
  }
  const gold = goldWords(sentences, raw);
  const goldWordKeys = new Set(gold.flat().map((word) => word.key));
  const goldSentences = new Set<string>();
  let first = 0;
  raw.tokens.forEach((token, index) => {
    const next = raw.tokens[index + 1];
    if (!next || next.sentence !== token.sentence) {
      goldSentences.add(`${itemAt(raw.tokens, first, 'raw.tokens').start}:${token.end}`);
      first = index + 1;
    }
  });
  const hits = (pred: Iterable<string>, goldSet: ReadonlySet<string>): number => {
    let count = 0;
    for (const part of pred) if (goldSet.has(part)) count++;
    return count;
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
  /** Exact-span NER scores on the held-out UNER documents, each tagged as one text. */
  readonly ner: EntityScores;
  /** The same, each sentence tagged alone (as the figures before issue 54's document consistency were measured). */
  readonly nerSentences: EntityScores;
  readonly speed: { words: number; cpuSeconds: number; wallSeconds: number; wordsPerCpuSecond: number; wordsPerWallSecond: number };
}

/** UPOS, XPOS, lemma, UAS and LAS (%) of the pipeline on the gold words of treebank sentences. */
function goldWordScores(pipeline: NlpPipeline, sentences: readonly ConlluSentence[]): Evaluation['gold'] {
  let upos = 0;
  let xpos = 0;
  let lemma = 0;
  let uas = 0;
  let las = 0;
  let words = 0;
  for (const sentence of sentences) {
    const forms = sentence.words.map((word) => word.form);
    const tags = pipeline.tag(forms);
    const parsed = pipeline.parseWords(
      forms,
      tags.map((tag) => tag.label),
    );
    for (const [index, word] of sentence.words.entries()) {
      words++;
      const tag = itemAt(tags, index, 'tags');
      if (tag.upos === word.upos) upos++;
      if (tag.xpos === word.xpos) xpos++;
      if (pipeline.lemma(word.form, tag.xpos) === word.lemma) lemma++;
      if (parsed.heads[index] === word.head) {
        uas++;
        if (parsed.relations[index] === word.deprel) las++;
      }
    }
  }
  const percent = (count: number): number => (100 * count) / words;
  return { upos: percent(upos), xpos: percent(xpos), lemma: percent(lemma), uas: percent(uas), las: percent(las) };
}

/** LAS F1 (%) of annotating raw text: an arc is right when its dependent, head and relation align with a gold word's. */
function rawLasF1(annotation: Annotation, sentences: readonly ConlluSentence[], raw: ReturnType<typeof rawText>): number {
  const gold = goldWords(sentences, raw);
  const goldByKey = new Map(gold.flat().map((word) => [word.key, word]));
  let correct = 0;
  let predictedWords = 0;
  for (const sentence of annotation.sentences) {
    const keys = sentence.tokens.map((token) => `${token.characterOffsetBegin}:${token.characterOffsetEnd}`);
    const goldAt = (position: number): GoldWord | undefined => {
      const key = keys[position - 1];
      return key === undefined ? undefined : goldByKey.get(key);
    };
    for (const arc of sentence.basicDependencies ?? []) {
      predictedWords++;
      const goldWord = goldAt(arc.dependent);
      if (!goldWord) continue;
      const relation = arc.dep === 'ROOT' ? 'root' : arc.dep;
      if (relation !== goldWord.deprel) continue;
      const rightHead = arc.governor === 0 ? goldWord.head === 0 : goldWord.head !== 0 && goldAt(arc.governor) === gold[goldWord.sentence]?.[goldWord.head - 1];
      if (rightHead) correct++;
    }
  }
  return f1(correct, predictedWords, gold.flat().length);
}

const TYPE_OF: Record<string, string> = { PERSON: 'PER', ORGANIZATION: 'ORG', LOCATION: 'LOC' };

/** Exact-span entity scores of the pipeline on IOB2 sentences, each tagged alone. */
function sentenceEntityScores(pipeline: NlpPipeline, sentences: readonly IobSentence[]): EntityScores {
  return entityScores(
    sentences.map((sentence) => ({ gold: sentence.tags, predicted: tagsOfWordTypes(pipeline.entities(sentence.tokens).map((type) => TYPE_OF[type] ?? type)) })),
  );
}

/** Exact-span entity scores of the pipeline on IOB2 sentences, tagged a UNER document at a time (`documentEntities`), as `annotate` tags a text. */
function documentEntityScores(pipeline: NlpPipeline, sentences: readonly IobSentence[]): EntityScores {
  return entityScores(
    unerDocuments(sentences).flatMap((document) => {
      const types = pipeline.documentEntities(document.map((sentence) => sentence.tokens));
      return document.map((sentence, index) => ({
        gold: sentence.tags,
        predicted: tagsOfWordTypes(itemAt(types, index, 'types').map((type) => TYPE_OF[type] ?? type)),
      }));
    }),
  );
}

/** Evaluates a pipeline on EWT dev (the first `sample` sentences when given) and held-out UNER documents. */
export function evaluate(pipeline: NlpPipeline, dataDir: string, sample?: number): Evaluation {
  const all = readEwt(dataDir, EWT_DEV);
  const dev = sample === undefined ? all : all.slice(0, sample);
  const gold = goldWordScores(pipeline, dev);
  const raw = rawText(dev);
  const cpuBefore = process.cpuUsage();
  const wallBefore = performance.now();
  const annotation = pipeline.annotate(raw.text);
  const cpu = process.cpuUsage(cpuBefore);
  const wallSeconds = (performance.now() - wallBefore) / 1000;
  const cpuSeconds = (cpu.user + cpu.system) / 1e6;
  // The annotation does not say which words share a surface token, so segmentation is scored on the segmenter's own output.
  const segmentation = scoreSegmentation(dev, raw, pipeline.segment(raw.text));
  const lasF1 = rawLasF1(annotation, dev, raw);
  const words = annotation.sentences.reduce((sum, sentence) => sum + sentence.tokens.length, 0);
  const heldOut = unerSplit(dataDir).heldOut;
  const unerSentences = sample === undefined ? heldOut : heldOut.slice(0, sample);
  const ner = documentEntityScores(pipeline, unerSentences);
  return {
    devSentences: dev.length,
    raw: { tokensF1: segmentation.tokens, wordsF1: segmentation.words, sentencesF1: segmentation.sentences, lasF1 },
    gold,
    ner,
    nerSentences: sentenceEntityScores(pipeline, unerSentences),
    speed: { words, cpuSeconds, wallSeconds, wordsPerCpuSecond: words / cpuSeconds, wordsPerWallSecond: words / wallSeconds },
  };
}
