import { describe, expect, it } from 'vitest';
import { correctPersons } from './person-rules.js';

const PROPN = 'PROPN\tNNP';
const OTHER = 'X\tXX';

describe('correctPersons', () => {
  it("takes a storm's name for no person", () => {
    expect(correctPersons(['after', 'Hurricane', 'Katrina', 'hit'], ['O', 'B-PER', 'I-PER', 'O'])).toEqual(['O', 'O', 'O', 'O']);
  });

  it('takes a title phrase tagged as a person for a title, and the proper nouns after it for the person', () => {
    const tokens = ['and', 'Minister', 'of', 'Defense', 'Hazem', 'Shaalan', 'in'];
    const labels = [OTHER, PROPN, OTHER, PROPN, PROPN, PROPN, OTHER];
    expect(correctPersons(tokens, ['O', 'B-PER', 'I-PER', 'I-PER', 'O', 'O', 'O'], labels)).toEqual(['O', 'O', 'O', 'O', 'B-PER', 'I-PER', 'O']);
    // with no name after it, the title is nobody
    expect(correctPersons(['the', 'Minister', 'of', 'Defense', 'said'], ['O', 'B-PER', 'I-PER', 'I-PER', 'O'], [OTHER, PROPN, OTHER, PROPN, OTHER])).toEqual([
      'O',
      'O',
      'O',
      'O',
      'O',
    ]);
  });

  it('takes a person in a list of places for a place, and leaves one in a mixed list or beside one place alone', () => {
    const tokens = ['in', 'Mosul', ',', 'Baiji', ',', 'and', 'Tuz', '.'];
    expect(correctPersons(tokens, ['O', 'B-LOC', 'O', 'B-LOC', 'O', 'O', 'B-PER', 'O'])).toEqual(['O', 'B-LOC', 'O', 'B-LOC', 'O', 'O', 'B-LOC', 'O']);
    const between = ['San', 'Jose', ',', 'Palo', 'Alto', ',', 'San', 'Francisco'];
    expect(correctPersons(between, ['B-LOC', 'I-LOC', 'O', 'B-PER', 'I-PER', 'O', 'B-LOC', 'I-LOC'])[3]).toBe('B-LOC');
    const mixed = ['Paris', ',', 'Google', 'and', 'Jane', 'Doe'];
    expect(correctPersons(mixed, ['B-LOC', 'O', 'B-ORG', 'O', 'B-PER', 'I-PER'])).toEqual(['B-LOC', 'O', 'B-ORG', 'O', 'B-PER', 'I-PER']);
    const one = ['Paris', 'and', 'Jane', 'Doe'];
    expect(correctPersons(one, ['B-LOC', 'O', 'B-PER', 'I-PER'])).toEqual(['B-LOC', 'O', 'B-PER', 'I-PER']);
    // entities apart by more than separators are no list
    const apart = ['Paris', ',', 'Rome', 'met', 'Jane'];
    expect(correctPersons(apart, ['B-LOC', 'O', 'B-LOC', 'O', 'B-PER'])[4]).toBe('B-PER');
  });
});
