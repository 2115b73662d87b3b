import { describe, expect, it } from 'vitest';
import { repairEntityTags } from './entity-repair.js';

const PROPN = 'PROPN\tNNP';

describe('repairEntityTags', () => {
  it('joins what follows a hyphen inside a person name, the first entity giving the type', () => {
    const tokens = ['Catherine', 'Zeta', '-', 'Jones', 'married'];
    expect(repairEntityTags(tokens, ['B-PER', 'I-PER', 'O', 'B-ORG', 'O'])).toEqual(['B-PER', 'I-PER', 'I-PER', 'I-PER', 'O']);
    const given = ['Jean', '-', 'Paul', 'Sartre', 'wrote'];
    expect(repairEntityTags(given, ['B-PER', 'O', 'B-PER', 'I-PER', 'O'])).toEqual(['B-PER', 'I-PER', 'I-PER', 'I-PER', 'O']);
  });

  it('joins a word the tagger left out after a hyphen only after a name particle or when the text shows the hyphen touching both words', () => {
    const janabi = ['Wahhab', 'al', '-', 'Janabi', 'of'];
    expect(repairEntityTags(janabi, ['B-PER', 'I-PER', 'O', 'O', 'O'])).toEqual(['B-PER', 'I-PER', 'I-PER', 'I-PER', 'O']);
    // a signature's "Brandon Luna - Analyst": without the text nothing says the hyphen is inside the name
    const signature = ['Brandon', 'Luna', '-', 'Analyst'];
    expect(repairEntityTags(signature, ['B-PER', 'I-PER', 'O', 'O'])).toEqual(['B-PER', 'I-PER', 'O', 'O']);
    expect(repairEntityTags(signature, ['B-PER', 'I-PER', 'O', 'O'], { attached: [false, false, false, false] })).toEqual(['B-PER', 'I-PER', 'O', 'O']);
    const day = ['Daniel', 'Day', '-', 'Lewis'];
    expect(repairEntityTags(day, ['B-PER', 'I-PER', 'O', 'O'], { attached: [false, false, true, true] })).toEqual(['B-PER', 'I-PER', 'I-PER', 'I-PER']);
  });

  it('keeps two entities of the same type other than persons apart across a hyphen, and a lower-case word out', () => {
    expect(repairEntityTags(['Google', '-', 'Mozilla'], ['B-ORG', 'O', 'B-ORG'])).toEqual(['B-ORG', 'O', 'B-ORG']);
    expect(repairEntityTags(['Iran', '-', 'Iraq', 'war'], ['B-LOC', 'O', 'B-LOC', 'O'])).toEqual(['B-LOC', 'O', 'B-LOC', 'O']);
    expect(repairEntityTags(['New', 'York', '-', 'based'], ['B-LOC', 'I-LOC', 'O', 'O'], { attached: [false, false, true, true] })).toEqual([
      'B-LOC',
      'I-LOC',
      'O',
      'O',
    ]);
  });

  it("gives a lone first name or a name ending with an initial the proper noun after it, but not a weekday or a longer name's next word", () => {
    const labels = [PROPN, PROPN, PROPN, PROPN];
    expect(repairEntityTags(['Traci', 'Warner', 'wrote'], ['B-PER', 'O', 'O'], { labels })).toEqual(['B-PER', 'I-PER', 'O']);
    expect(repairEntityTags(['George', 'W.', 'Bush', 'spoke'], ['B-PER', 'I-PER', 'O', 'O'], { labels })).toEqual(['B-PER', 'I-PER', 'I-PER', 'O']);
    expect(repairEntityTags(['Smith', 'Monday'], ['B-PER', 'O'], { labels })).toEqual(['B-PER', 'O']);
    expect(repairEntityTags(['John', 'Staikos', 'Direct', 'Dial'], ['B-PER', 'I-PER', 'O', 'O'], { labels })).toEqual(['B-PER', 'I-PER', 'O', 'O']);
    // without parts of speech the rule does not fire
    expect(repairEntityTags(['Traci', 'Warner'], ['B-PER', 'O'])).toEqual(['B-PER', 'O']);
  });

  it("makes the proper nouns after a person's title a person, the title left out, but not after a title that begins other names", () => {
    const labels = ['NOUN\tNN', PROPN, 'AUX\tVBZ'];
    expect(repairEntityTags(['PM', 'Allawi', 'is'], ['O', 'O', 'O'], { labels })).toEqual(['O', 'B-PER', 'O']);
    expect(repairEntityTags(['Prime', 'Rib', 'is'], ['O', 'O', 'O'], { labels })).toEqual(['O', 'O', 'O']);
    expect(repairEntityTags(['General', 'Motors', 'is'], ['O', 'O', 'O'], { labels })).toEqual(['O', 'O', 'O']);
  });

  it('leaves the tags it is given unchanged', () => {
    const tags = ['B-PER', 'O', 'B-ORG'];
    repairEntityTags(['Zeta', '-', 'Jones'], tags);
    expect(tags).toEqual(['B-PER', 'O', 'B-ORG']);
  });

  it("leaves a form of address the tagger put at the start of a person's name out of it, other titles in", () => {
    expect(repairEntityTags(['Drs.', 'Ali', 'work', 'wonders'], ['B-PER', 'I-PER', 'O', 'O'])).toEqual(['O', 'B-PER', 'O', 'O']);
    expect(repairEntityTags(['Mr', 'Dr', 'Dorn', 'came'], ['B-PER', 'I-PER', 'I-PER', 'O'])).toEqual(['O', 'O', 'B-PER', 'O']);
    // a title alone, or before a word that is no name, stays as tagged
    expect(repairEntityTags(['Doctor', 'said'], ['B-PER', 'O'])).toEqual(['B-PER', 'O']);
    expect(repairEntityTags(['Shaikh', 'Abdul', 'Wahhab'], ['B-PER', 'I-PER', 'I-PER'])).toEqual(['B-PER', 'I-PER', 'I-PER']);
    expect(repairEntityTags(['Dr', 'of', 'Defense'], ['B-PER', 'I-PER', 'I-PER'])).toEqual(['B-PER', 'I-PER', 'I-PER']);
  });
});
