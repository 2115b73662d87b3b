import { describe, expect, it } from 'vitest';
import { openNameLexicon } from './open-name-lexicon.js';

describe('openNameLexicon', () => {
  it('maps lower-cased words to their classes in the open lists, B-/I- in multi-word entries', async () => {
    const lexicon = await openNameLexicon();
    const classes = (word: string): string[] => lexicon.get(word)?.split(',') ?? [];
    expect(classes('boston')).toEqual(expect.arrayContaining(['city', 'name']));
    expect(classes('paris')).toEqual(expect.arrayContaining(['capital', 'city']));
    expect(classes('france')).toContain('country');
    expect(classes('california')).toContain('region');
    expect(classes('hopper')).toEqual(['name']);
    expect(classes('microsoft')).toEqual(['company']);
    // "San Francisco", "New York": places of several words
    expect(classes('francisco')).toContain('B-city');
    expect(classes('york')).toEqual(expect.arrayContaining(['city', 'I-city']));
    expect(lexicon.has('Boston')).toBe(false);
  });

  it('reads only the lists it is asked for, and places over the populations given', async () => {
    const lexicon = await openNameLexicon({ cityPopulation: 1_000_000, townPopulation: 0, lists: ['countries'] });
    expect(lexicon.get('france')).toBe('country');
    expect(lexicon.get('london')?.split(',')).toEqual(['capital', 'city']);
    expect(lexicon.has('springfield')).toBe(false);
    expect(lexicon.has('hopper')).toBe(false);
  });
});
