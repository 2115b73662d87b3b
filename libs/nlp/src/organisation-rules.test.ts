import { describe, expect, it } from 'vitest';
import { markOrganisations } from './organisation-rules.js';

const PROPN = 'PROPN\tNNP';
const NOUN = 'NOUN\tNN';
const ADP = 'ADP\tIN';
const DET = 'DET\tDT';
const PUNCT = 'PUNCT\t,';
const VERB = 'VERB\tVBD';

describe('markOrganisations', () => {
  it('marks a capitalised name before a company suffix, the comma and suffix included, stopping at a person before it', () => {
    const tokens = ['Traci', 'Warner', 'Constellation', 'Power', 'Source', ',', 'Inc.', 'called'];
    const tags = ['B-PER', 'I-PER', 'O', 'O', 'O', 'O', 'O', 'O'];
    const labels = [PROPN, PROPN, PROPN, PROPN, PROPN, PUNCT, PROPN, VERB];
    expect(markOrganisations(tokens, tags, labels)).toEqual(['B-PER', 'I-PER', 'B-ORG', 'I-ORG', 'I-ORG', 'I-ORG', 'I-ORG', 'O']);
    expect(markOrganisations(['Enron', 'Corp.'], ['B-LOC', 'O'], [PROPN, PROPN])).toEqual(['B-ORG', 'I-ORG']);
  });

  it('marks a capitalised name ending in an organisation head, with "of", "on" or "for" and the name it governs', () => {
    const tokens = ['the', 'Housing', 'Authority', 'of', 'New', 'Orleans', 'sued'];
    const tags = ['O', 'O', 'O', 'O', 'B-LOC', 'I-LOC', 'O'];
    const labels = [DET, PROPN, PROPN, ADP, PROPN, PROPN, VERB];
    expect(markOrganisations(tokens, tags, labels)).toEqual(['O', 'B-ORG', 'I-ORG', 'I-ORG', 'I-ORG', 'I-ORG', 'O']);
    const council = ['at', 'the', 'Council', 'on', 'Foreign', 'Relations'];
    expect(markOrganisations(council, ['O', 'O', 'B-ORG', 'O', 'O', 'O'], [ADP, DET, PROPN, ADP, PROPN, PROPN])).toEqual([
      'O',
      'O',
      'B-ORG',
      'I-ORG',
      'I-ORG',
      'I-ORG',
    ]);
    expect(markOrganisations(['Sept.', '11', 'Commission', 'member'], ['O', 'O', 'O', 'O'], [PROPN, 'NUM\tCD', PROPN, NOUN])).toEqual([
      'B-ORG',
      'I-ORG',
      'I-ORG',
      'O',
    ]);
  });

  it('marks an acronym in brackets right after an organisation, and not after a person or a place', () => {
    const tokens = ['the', 'Housing', 'Authority', '(', 'HANO', ')', 'and', 'Boston', '(', 'BOS', ')'];
    const tags = ['O', 'B-ORG', 'I-ORG', 'O', 'O', 'O', 'O', 'B-LOC', 'O', 'O', 'O'];
    const labels = [DET, PROPN, PROPN, PUNCT, PROPN, PUNCT, 'CCONJ\tCC', PROPN, PUNCT, PROPN, PUNCT];
    expect(markOrganisations(tokens, tags, labels)).toEqual(['O', 'B-ORG', 'I-ORG', 'O', 'B-ORG', 'O', 'O', 'B-LOC', 'O', 'O', 'O']);
  });

  it('leaves a lone head the tagger did not mark, a sentence-initial determiner, a head in capitals and a number before a name alone', () => {
    expect(markOrganisations(['Council', 'met'], ['O', 'O'], [PROPN, VERB])).toEqual(['O', 'O']);
    expect(markOrganisations(['The', 'Ministry', 'said'], ['O', 'O', 'O'], [DET, PROPN, VERB])).toEqual(['O', 'O', 'O']);
    expect(markOrganisations(['ENRON', 'COUNCIL'], ['O', 'O'], [PROPN, PROPN])).toEqual(['O', 'O']);
    expect(markOrganisations(['in', '2004', 'Commission', 'staff'], ['O', 'O', 'O', 'O'], [ADP, 'NUM\tCD', PROPN, NOUN])).toEqual(['O', 'O', 'O', 'O']);
  });
});
