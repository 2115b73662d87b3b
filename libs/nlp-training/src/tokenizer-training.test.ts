import { describe, expect, it } from 'vitest';
import { parseConllu } from './conllu.js';
import { learnLexicon } from './tokenizer-training.js';

/** A one-sentence CoNLL-U document of words; `+` after a word means no space after it. */
function sentence(words: readonly string[]): string {
  const lines = words.map((word, index) => {
    const form = word.replace(/\+$/, '');
    return `${index + 1}\t${form}\t${form}\tX\tX\t_\t0\tdep\t_\t${word.endsWith('+') ? 'SpaceAfter=No' : '_'}`;
  });
  return ['# newdoc', ...lines, ''].join('\n');
}

describe('learnLexicon', () => {
  it('learns the prefixes whose hyphenated words the treebank keeps whole in two words or more and seldom splits', () => {
    const text = [
      sentence(['a', 'non-Microsoft', 'browser', 'and', 'non-profit', 'groups']),
      sentence(['an', 'e-mail', 'plan']),
      sentence(['a', 'long-haul', 'flight', 'and', 'long-range', 'plans', 'in', 'the', 'long+', '-+', 'term', 'and', 'long+', '-+', 'run']),
    ].join('\n');
    const lexicon = learnLexicon(parseConllu(text));
    expect([...lexicon.hyphenPrefixes]).toEqual(['non']);
    expect([...lexicon.hyphenated].sort()).toEqual(['e-mail', 'long-haul', 'long-range', 'non-microsoft', 'non-profit']);
  });
});
