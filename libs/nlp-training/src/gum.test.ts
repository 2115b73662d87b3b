import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ConlluWord } from './conllu.js';
import { testDataDir } from './data-dir.js';
import { readGumTreebank, titlesAsEwt } from './gum.js';

/** Words of a sentence from [form, upos, head, deprel] rows. */
function words(rows: readonly [string, string, number, string][]): ConlluWord[] {
  return rows.map(([form, upos, head, deprel], index) => ({
    id: index + 1,
    form,
    lemma: '_',
    upos,
    xpos: '_',
    feats: '_',
    head,
    deprel,
    deps: '_',
    misc: '_',
  }));
}

const tree = (sentence: readonly ConlluWord[]): string[] => sentence.map((word) => `${word.form}<-${word.deprel}:${word.head}`);

describe('GUM in EWT conventions', () => {
  it('makes the name the head of a title before it, as EWT does (the title its nmod:desc)', () => {
    // GUM: "by the Berlin music critic Louis Ehlert" with the title as head and the name flat under it
    const gum = words([
      ['praised', 'VERB', 0, 'root'],
      ['by', 'ADP', 6, 'case'],
      ['the', 'DET', 6, 'det'],
      ['Berlin', 'PROPN', 5, 'compound'],
      ['music', 'NOUN', 6, 'compound'],
      ['critic', 'NOUN', 1, 'obl:agent'],
      ['Louis', 'PROPN', 6, 'flat'],
      ['Ehlert', 'PROPN', 6, 'flat'],
      ['in', 'ADP', 10, 'case'],
      ['1878', 'NUM', 6, 'nmod'],
    ]);
    expect(tree(titlesAsEwt(gum))).toEqual([
      'praised<-root:0',
      'by<-case:7',
      'the<-det:7',
      'Berlin<-compound:5',
      'music<-compound:6',
      'critic<-nmod:desc:7',
      'Louis<-obl:agent:1',
      'Ehlert<-flat:7',
      'in<-case:10',
      '1878<-nmod:7',
    ]);
  });

  it("makes a bare title's apposition after it the head too, as EWT does", () => {
    // GUM: "television presenter Sally Meen said", the name an apposition of the title, which has no determiner
    const gum = words([
      ['television', 'NOUN', 2, 'compound'],
      ['presenter', 'NOUN', 5, 'nsubj'],
      ['Sally', 'PROPN', 2, 'appos'],
      ['Meen', 'PROPN', 3, 'flat'],
      ['said', 'VERB', 0, 'root'],
    ]);
    expect(tree(titlesAsEwt(gum))).toEqual(['television<-compound:2', 'presenter<-nmod:desc:3', 'Sally<-nsubj:5', 'Meen<-flat:3', 'said<-root:0']);
  });

  it('leaves other nouns before proper nouns as they are (an apposition)', () => {
    const gum = words([
      ['Her', 'PRON', 2, 'nmod:poss'],
      ['father', 'NOUN', 4, 'nsubj'],
      ['Mohammed', 'PROPN', 2, 'appos'],
      ['left', 'VERB', 0, 'root'],
    ]);
    expect(titlesAsEwt(gum)).toEqual(gum);
  });

  it('reads the documents of the data directory, in name order', () => {
    const { sentences, files } = readGumTreebank(testDataDir());
    expect(files).toEqual(['ner/gum/GUM_news_stampede.conllu', 'ner/gum/GUM_news_worship.conllu']);
    expect(sentences).toHaveLength(20);
  });

  it("names GUM's temporal and bare noun-phrase modifiers as EWT does", () => {
    const dir = mkdtempSync(join(tmpdir(), 'loom-gum-'));
    try {
      mkdirSync(join(dir, 'ner', 'gum'), { recursive: true });
      const row = (id: number, form: string, upos: string, head: number, deprel: string): string =>
        [id, form, '_', upos, '_', '_', head, deprel, '_', '_'].join('\t');
      writeFileSync(
        join(dir, 'ner', 'gum', 'GUM_news_a.conllu'),
        [
          '# text = Rain fell Monday.',
          row(1, 'Rain', 'NOUN', 2, 'nsubj'),
          row(2, 'fell', 'VERB', 0, 'root'),
          row(3, 'Monday', 'PROPN', 2, 'obl:tmod'),
          row(4, '.', 'PUNCT', 2, 'punct'),
          '',
          '',
        ].join('\n'),
      );
      expect(readGumTreebank(dir).sentences.flatMap((sentence) => sentence.words.map((word) => word.deprel))).toEqual([
        'nsubj',
        'root',
        'obl:unmarked',
        'punct',
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
