import { describe, expect, it } from 'vitest';
import { harmoniseDocumentTags } from './document-entities.js';

const PROPN = 'PROPN\tNNP';
const OTHER = 'X\tXX';

/** A sentence of whitespace-separated tokens, its tags and labels: a token ending in `/PER`, `/ORG`… is tagged so, `*` marks a proper noun. */
function sentence(text: string): { tokens: string[]; tags: string[]; labels: string[] } {
  const tokens: string[] = [];
  const tags: string[] = [];
  const labels: string[] = [];
  for (const part of text.split(' ')) {
    const [word, type] = part.split('/');
    const proper = word!.endsWith('*');
    tokens.push(proper ? word!.slice(0, -1) : word!);
    const previous = tags[tags.length - 1];
    tags.push(type === undefined ? 'O' : previous?.endsWith(type) === true && type !== 'O' ? `I-${type}` : `B-${type}`);
    labels.push(proper || type !== undefined ? PROPN : OTHER);
  }
  return { tokens, tags, labels };
}

describe('harmoniseDocumentTags', () => {
  it("gives a name's other untagged mentions the type it was found with, in earlier and later sentences", () => {
    const document = [
      sentence('HANO* was late'),
      sentence('the Housing/ORG Authority/ORG of/ORG New/ORG Orleans/ORG ( HANO/ORG )'),
      sentence('HANO* has not provided'),
    ];
    expect(harmoniseDocumentTags(document)).toEqual([['B-ORG', 'O', 'O'], document[1]!.tags, ['B-ORG', 'O', 'O', 'O']]);
  });

  it('types an acronym defined in brackets after an organisation as that organisation where the tagger typed it otherwise alone', () => {
    const document = [
      sentence('the Housing/ORG Authority/ORG of/ORG New/ORG Orleans/ORG ( HANO/ORG )'),
      sentence('HANO/PER has not replied'),
      sentence('HANO/PER Smith/PER and the ( UN/PER ) spoke'),
    ];
    const tags = harmoniseDocumentTags(document);
    expect(tags[1]).toEqual(['B-ORG', 'O', 'O', 'O']);
    // inside a longer name, and an acronym no organisation's name defines, stay as tagged
    expect(tags[2]).toEqual(document[2]!.tags);
  });

  it("tags a person's surname standing alone after the full name was found", () => {
    const document = [sentence('Prime Minister Iyad/PER Allawi/PER spoke'), sentence("Allawi* 's cousin was abducted")];
    expect(harmoniseDocumentTags(document)[1]).toEqual(['B-PER', 'O', 'O', 'O', 'O']);
  });

  it('leaves a mention that continues an untagged proper noun, a word written otherwise, a word not a proper noun and a tagged word alone', () => {
    const document = [
      sentence('Thomas/PER Jones/PER came'),
      sentence('St.* Thomas* residents'),
      sentence('jones* came'),
      sentence('Jones with Thomas/ORG'),
      sentence('Jones* Street* is long'),
    ];
    const out = harmoniseDocumentTags(document);
    expect(out[1]).toEqual(['O', 'O', 'O']);
    expect(out[2]).toEqual(['O', 'O']);
    expect(out[3]).toEqual(['O', 'O', 'B-ORG']);
    expect(out[4]).toEqual(['O', 'O', 'O', 'O']);
  });

  it('takes the type most mentions have and none when two types tie', () => {
    const majority = [sentence('Jordan/ORG'), sentence('Jordan/ORG'), sentence('Jordan/PER'), sentence('Jordan* said')];
    expect(harmoniseDocumentTags(majority)[3]).toEqual(['B-ORG', 'O']);
    const tie = [sentence('Jordan/ORG'), sentence('Jordan/PER'), sentence('Jordan* said')];
    expect(harmoniseDocumentTags(tie)[2]).toEqual(['O', 'O']);
  });

  it("leaves places as the tagger gave them: a place's other mentions may be used otherwise", () => {
    const document = [sentence('to Eurostar/LOC'), sentence('the Eurostar* train')];
    expect(harmoniseDocumentTags(document)[1]).toEqual(['O', 'O', 'O']);
  });

  it('prefers the longest name and does not change the given tags', () => {
    const document = [sentence('Bank/ORG of/ORG America/ORG and America/LOC'), sentence('Bank* of America* again')];
    const before = JSON.stringify(document);
    expect(harmoniseDocumentTags(document)[1]).toEqual(['B-ORG', 'I-ORG', 'I-ORG', 'O']);
    expect(JSON.stringify(document)).toBe(before);
  });
});
