import { decodeModelFile, decodeNer, encodeModelFile, encodeNer, tagEntities, trainNer, type NerExample } from '@loom/nlp';
import { describe, expect, it } from 'vitest';
import { testDataDir } from './data-dir.js';
import { CaseCounts, plainTextSentences, trainingWordClasses } from './word-classes.js';

describe('CaseCounts', () => {
  it('classes words by how often they are capitalised inside sentences, leaving out first words and rare words', () => {
    const counts = new CaseCounts();
    for (let copy = 0; copy < 25; copy++) counts.addSentence(['Then', 'Oslo', 'and', 'the', 'NASA', 'team']);
    for (let copy = 0; copy < 3; copy++) counts.addSentence(['We', 'met', 'Max', 'at', 'max', 'and', 'max', 'speed']);
    counts.addSentence(['Max', 'Oddword', 'Oddword', 'went']);
    const classes = counts.classes();
    expect(classes.get('oslo')).toBe('capital');
    expect(classes.get('the')).toBe('lower');
    expect(classes.get('nasa')).toBe('acronym');
    expect(classes.get('max')).toBe('mostly-lower-rare');
    // a sentence's first word is not counted; a word seen twice inside sentences has no class
    expect(classes.has('then')).toBe(false);
    expect(classes.has('oddword')).toBe(false);
  });

  it('reads plain text as sentences of words and punctuation', () => {
    expect(plainTextSentences('The Space Shuttle landed. Wear was found, on gears!  Why?')).toEqual([
      ['The', 'Space', 'Shuttle', 'landed', '.'],
      ['Wear', 'was', 'found', ',', 'on', 'gears', '!'],
      ['Why', '?'],
    ]);
  });

  it("learns classes from the test corpora's text", () => {
    const classes = trainingWordClasses(testDataDir(), ['wikigold', 'btc']);
    expect(classes.size).toBeGreaterThan(100);
    expect(classes.get('the')).toMatch(/^lower/);
  });
});

describe('NER with word classes', () => {
  // made-up words seen only at a sentence's start: only their class says one is a name
  const names = ['Gaviron', 'Hulmetz', 'Istrapo', 'Jorumbe', 'Kelvashti', 'Lunderoy'];
  const words = ['Baskle', 'Crumond', 'Dweffer', 'Emblick', 'Frattle', 'Glurrin'];
  const wordClasses = new Map<string, string>([...names, 'Nostrux'].map((word) => [word.toLowerCase(), 'capital']));
  for (const word of [...words, 'Plimmet']) wordClasses.set(word.toLowerCase(), 'lower');
  const pos = ['X\tXX', 'VERB\tVBD', 'ADV\tRB', 'PUNCT\t.'];
  const examples: NerExample[] = [...names, ...words].map((word) => ({
    tokens: [word, 'went', 'home', '.'],
    tags: [names.includes(word) ? 'B-PER' : 'O', 'O', 'O', 'O'],
    pos,
  }));

  it('tags unseen words by their class, and keeps the classes in the model file', () => {
    const model = trainNer(examples, { epochs: 5, seed: 1, bits: 16, gazetteerFolds: 1, lexicon: new Map(), nameLists: new Map(), wordClasses });
    const file = encodeNer(model, 0);
    expect(file.sections.has('wordClasses')).toBe(true);
    const loaded = decodeNer('ner', decodeModelFile('ner', encodeModelFile(file.header, file.sections)));
    for (const tagger of [model, loaded]) {
      expect(tagEntities(tagger, ['Nostrux', 'went', 'home', '.'], pos)[0]).toBe('B-PER');
      expect(tagEntities(tagger, ['Plimmet', 'went', 'home', '.'], pos)[0]).toBe('O');
    }
    // a model trained without classes has no such section and loads with none
    const without = encodeNer(trainNer(examples, { epochs: 1, seed: 1, bits: 10, gazetteerFolds: 1, lexicon: new Map(), nameLists: new Map() }), 0);
    expect(without.sections.has('wordClasses')).toBe(false);
    expect(decodeNer('ner', decodeModelFile('ner', encodeModelFile(without.header, without.sections))).wordClasses?.size).toBe(0);
  });
});
