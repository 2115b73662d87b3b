import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { entitySpans } from '@loom/nlp';
import { EWT_TRAIN, NER_SETTINGS, openNerExamples, parseConllu, parseIob, readEwt, surfaceTokens, testDataDir } from '@loom/nlp-training';

const data = testDataDir();

describe('the committed corpus slices read', () => {
  it('EWT dev: 2,001 sentences whose surface tokens rebuild each sentence text', () => {
    const sentences = parseConllu(readFileSync(join(data, 'ud-english-ewt', 'en_ewt-ud-dev.conllu'), 'utf8'), 'en_ewt-ud-dev.conllu');
    expect(sentences).toHaveLength(2001);
    for (const sentence of sentences) {
      const rebuilt = surfaceTokens(sentence)
        .map((t) => t.form + (t.spaceAfter ? ' ' : ''))
        .join('')
        .trimEnd();
      expect(rebuilt.replace(/\s+/g, ' ')).toBe(sentence.text!.replace(/\s+/g, ' ').trimEnd());
      expect(sentence.words.filter((w) => w.head === 0)).toHaveLength(1);
    }
  });

  it('UNER dev: sentences keyed by sent_id with PER, ORG and LOC spans', () => {
    const sentences = parseIob(readFileSync(join(data, 'uner-english-ewt', 'en_ewt-ud-dev.iob2'), 'utf8'), { source: 'en_ewt-ud-dev.iob2' });
    expect(sentences.length).toBeGreaterThan(1900);
    expect(sentences.every((s) => s.sentId !== undefined)).toBe(true);
    const types = new Set(sentences.flatMap((s) => entitySpans(s.tags).map((span) => span.type)));
    expect([...types].sort()).toEqual(['LOC', 'ORG', 'PER']);
  });

  it('hold what the tests take: 400 EWT train sentences (parser), 3,000 open NER examples (train-slice)', () => {
    expect(readEwt(data, EWT_TRAIN)).toHaveLength(400);
    expect(openNerExamples(data, NER_SETTINGS.openSets).examples).toHaveLength(3000);
  });
});
