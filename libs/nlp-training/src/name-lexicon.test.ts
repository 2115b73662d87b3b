import { describe, expect, it } from 'vitest';
import { compromiseNameLexicon } from './name-lexicon.js';

describe('compromiseNameLexicon', () => {
  it("maps lower-cased words to the coarse classes of compromise's lexicon, marking the words of multi-word entries B-/I-", async () => {
    const lexicon = await compromiseNameLexicon();
    expect(lexicon.get('john')).toBe('first');
    expect(lexicon.get('london')).toBe('city');
    expect(lexicon.get('google')).toBe('org');
    expect(lexicon.get('university')).toBe('orgword');
    expect(lexicon.get('kerala')).toBe('region');
    expect(lexicon.get('smith')?.split(',')).toContain('last');
    expect(lexicon.get('new')?.split(',')).toEqual(expect.arrayContaining(['B-city', 'B-region']));
    expect(lexicon.has('London')).toBe(false);
    // 'the' is no name by itself, only a word of multi-word names ("the hague")
    expect(
      lexicon
        .get('the')
        ?.split(',')
        .every((cls) => cls.startsWith('B-') || cls.startsWith('I-')),
    ).toBe(true);
  });
});
