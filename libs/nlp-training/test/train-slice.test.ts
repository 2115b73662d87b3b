import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { entitySpans } from '@loom/nlp';
import {
  EWT_DEV,
  EWT_TRAIN,
  NER_SETTINGS,
  openNerExamples,
  readEwt,
  testDataDir,
  trainLemmatizerModel,
  trainNerModel,
  trainParserModel,
  trainTaggerModel,
  trainTokenizerModel,
  unerSplit,
  type TrainContext,
} from '@loom/nlp-training';

// Each model is trained on a small slice of its training data and must beat a trivial baseline on a
// dev slice: the training code stays tested without running full training here.
const dataDir = testDataDir();
const modelsDir = mkdtempSync(join(tmpdir(), 'loom-nlp-slice-'));
const ctx: TrainContext = { dataDir, modelsDir, log: () => undefined, limit: 300, devLimit: 150, epochs: 3, bits: 18 };
const train = readEwt(dataDir, EWT_TRAIN).slice(0, 300);
const dev = readEwt(dataDir, EWT_DEV).slice(0, 150);

// The parser and NER read the tagger's tags: it is trained once, first, whatever order the tests run in.
let taggerScores: ReturnType<typeof trainTaggerModel>['dev'];
beforeAll(() => {
  taggerScores = trainTaggerModel(ctx).dev;
}, 600_000);
afterAll(() => rmSync(modelsDir, { recursive: true, force: true }));

// Minutes on a loaded shared machine, seconds on a quiet one.
describe('training on a slice beats a trivial baseline', { timeout: 600_000 }, () => {
  it('tokenizer: tokens F1 over whitespace splitting, sentences F1 over splitting after every . ! ?', () => {
    const scores = trainTokenizerModel(ctx);
    // whitespace splitting finds a gold token only where the token is a whole whitespace-separated chunk
    let chunks = 0;
    let whole = 0;
    let goldTokens = 0;
    for (const s of dev) {
      const text = s.text!;
      const pieces = text.split(/\s+/).filter((p) => p !== '');
      chunks += pieces.length;
      goldTokens += s.words.length - s.multiwordTokens.reduce((n, m) => n + m.last - m.first, 0);
      whole += pieces.filter((p) => s.words.some((w) => w.form === p)).length;
    }
    const whitespaceF1 = (200 * whole) / (chunks + goldTokens);
    expect(scores.tokens).toBeGreaterThan(whitespaceF1);
    expect(scores.sentences).toBeGreaterThan(50);
  });

  it('tagger: UPOS over the most frequent tag of each word (NOUN when unseen)', () => {
    const scores = taggerScores;
    const counts = new Map<string, Map<string, number>>();
    for (const s of train)
      for (const w of s.words) {
        const m = counts.get(w.form) ?? new Map<string, number>();
        m.set(w.upos, (m.get(w.upos) ?? 0) + 1);
        counts.set(w.form, m);
      }
    let right = 0;
    let n = 0;
    for (const s of dev)
      for (const w of s.words) {
        const m = counts.get(w.form);
        const guess = m ? [...m].sort((a, b) => b[1] - a[1])[0]![0] : 'NOUN';
        n++;
        if (guess === w.upos) right++;
      }
    expect(scores.upos).toBeGreaterThan((100 * right) / n);
  });

  it('lemmatizer: over the lower-cased form', () => {
    const accuracy = trainLemmatizerModel(ctx);
    let same = 0;
    let n = 0;
    for (const s of dev)
      for (const w of s.words) {
        n++;
        if (w.form.toLowerCase() === w.lemma) same++;
      }
    expect(accuracy).toBeGreaterThan((100 * same) / n);
  });

  it('parser: UAS over attaching every word to the previous one', () => {
    const scores = trainParserModel(ctx);
    let right = 0;
    let n = 0;
    for (const s of dev)
      for (const w of s.words) {
        n++;
        if (w.head === w.id - 1) right++;
      }
    expect(scores.uas).toBeGreaterThan((100 * right) / n);
    expect(scores.las).toBeGreaterThan(0);
  });

  it('NER: exact-span F1 over tagging each token with its most frequent training tag', async () => {
    const nerCtx = { ...ctx, limit: 3000, devLimit: 300, members: 1 };
    const scores = await trainNerModel(nerCtx);
    const { heldOut } = unerSplit(dataDir);
    const counts = new Map<string, Map<string, number>>();
    for (const s of openNerExamples(dataDir, NER_SETTINGS.openSets).examples.slice(0, nerCtx.limit))
      s.tokens.forEach((t, i) => {
        const m = counts.get(t) ?? new Map<string, number>();
        m.set(s.tags[i]!, (m.get(s.tags[i]!) ?? 0) + 1);
        counts.set(t, m);
      });
    let tp = 0;
    let predicted = 0;
    let gold = 0;
    for (const s of heldOut.slice(0, 300)) {
      const tags = s.tokens.map((t) => {
        const m = counts.get(t);
        return m ? [...m].sort((a, b) => b[1] - a[1])[0]![0] : 'O';
      });
      const p = entitySpans(tags);
      const g = new Set(entitySpans(s.tags).map((x) => `${x.start}:${x.end}:${x.type}`));
      predicted += p.length;
      gold += g.size;
      tp += p.filter((x) => g.has(`${x.start}:${x.end}:${x.type}`)).length;
    }
    expect(scores.micro.f1).toBeGreaterThan((200 * tp) / (predicted + gold));
  });
});
