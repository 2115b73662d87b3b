import { describe, expect, it } from 'vitest';
import { parseConllu } from './conllu.js';
import { caseCopies, gumEntities, withoutTitles } from './ner-data.js';
import { entitySpans, NER_TAGS, tagEntities, trainNer, type NerExample, decodeNer, encodeNer, decodeModelFile, encodeModelFile } from '@loom/nlp';

// GUM marks whole mentions: "an Erasmus who writes", "Mr. Roberts 's"; UNER marks the name only.
const GUM = `# sent_id = g1
# text = an Erasmus who writes met Mr. Roberts's friends and Chuck and Gretchen at the Bank of America
1	an	a	DET	DT	_	2	det	_	Entity=(1-person
2	Erasmus	Erasmus	PROPN	NNP	_	5	nsubj	_	_
3	who	who	PRON	WP	_	4	nsubj	_	_
4	writes	write	VERB	VBZ	_	2	acl:relcl	_	Entity=1)
5	met	meet	VERB	VBD	_	0	root	_	_
6	Mr.	Mr.	PROPN	NNP	_	7	nmod:desc	_	Entity=(2-person(3-person
7	Roberts	Roberts	PROPN	NNP	_	9	nmod:poss	_	_
8	's	's	PART	POS	_	7	case	_	Entity=3)
9	friends	friend	NOUN	NNS	_	5	obj	_	Entity=2)
10	and	and	CCONJ	CC	_	11	cc	_	_
11	Chuck	Chuck	PROPN	NNP	_	9	conj	_	Entity=(4-person
12	and	and	CCONJ	CC	_	13	cc	_	_
13	Gretchen	Gretchen	PROPN	NNP	_	11	conj	_	Entity=4)
14	at	at	ADP	IN	_	17	case	_	_
15	the	the	DET	DT	_	17	det	_	Entity=(5-organization
16	Bank	Bank	PROPN	NNP	_	5	obl	_	_
17	of	of	ADP	IN	_	18	case	_	_
18	America	America	PROPN	NNP	_	16	nmod	_	Entity=5)
`;

describe('GUM entities as UNER marks them', () => {
  it('keeps the proper-noun run around the head: no determiner, relative clause, title, possessive or coordination', () => {
    const [sentence] = parseConllu(GUM, 'gum');
    const tags = gumEntities(sentence!);
    const spans = entitySpans(tags).map(
      (span) =>
        `${span.type}:${sentence!.words
          .slice(span.start, span.end)
          .map((word) => word.form)
          .join(' ')}`,
    );
    // "Chuck and Gretchen" is one GUM mention headed by Chuck: only the name around the head stays
    expect(spans).toEqual(['PER:Erasmus', 'PER:Roberts', 'PER:Chuck', 'ORG:Bank of America']);
  });

  it('takes leading titles out of PER spans and leaves a lone title-like name alone', () => {
    expect(withoutTitles(['Dr.', 'Dorn', 'said'], ['B-PER', 'I-PER', 'O'])).toEqual(['O', 'B-PER', 'O']);
    expect(withoutTitles(['President', 'Vladimir', 'Putin'], ['B-PER', 'I-PER', 'I-PER'])).toEqual(['O', 'B-PER', 'I-PER']);
    expect(withoutTitles(['King'], ['B-PER'])).toEqual(['B-PER']);
    expect(withoutTitles(['Dr.', 'Pepper'], ['B-ORG', 'I-ORG'])).toEqual(['B-ORG', 'I-ORG']);
  });
});

describe('NER decoding', () => {
  it('learns multi-word names and only ever writes valid IOB2', () => {
    const names = ['Kay Mann', 'Bill Gottlieb', 'Greg Mannino', 'Ariel Sharon', 'Vladi Pimenov', 'Harry Preuss'];
    const places = ['Tampa', 'Houston', 'Oakland', 'Phoenix'];
    const examples: NerExample[] = [];
    names.forEach((name, index) => {
      const [first, last] = name.split(' ') as [string, string];
      const place = places[index % places.length]!;
      examples.push({
        tokens: ['I', 'met', first, last, 'in', place, '.'],
        tags: ['O', 'O', 'B-PER', 'I-PER', 'O', 'B-LOC', 'O'],
        pos: ['PRON\tPRP', 'VERB\tVBD', 'PROPN\tNNP', 'PROPN\tNNP', 'ADP\tIN', 'PROPN\tNNP', 'PUNCT\t.'],
      });
    });
    const model = trainNer(examples, { epochs: 5, seed: 1, bits: 16, gazetteerFolds: 1, lexicon: new Map(), nameLists: new Map() });
    const tags = tagEntities(
      model,
      ['I', 'met', 'Kay', 'Mann', 'in', 'Tampa', '.'],
      ['PRON\tPRP', 'VERB\tVBD', 'PROPN\tNNP', 'PROPN\tNNP', 'ADP\tIN', 'PROPN\tNNP', 'PUNCT\t.'],
    );
    expect(tags).toEqual(['O', 'O', 'B-PER', 'I-PER', 'O', 'B-LOC', 'O']);
    // an untrained model scores every tag 0: the decoder still never starts with I- or switches type inside an entity
    const empty = trainNer([], { epochs: 1, seed: 1, bits: 10, gazetteerFolds: 1, lexicon: new Map(), nameLists: new Map() });
    const words = ['a', 'b', 'c', 'd'];
    const out = tagEntities(
      empty,
      words,
      words.map(() => 'X\tX'),
    );
    out.forEach((tag, index) => {
      expect(NER_TAGS).toContain(tag);
      if (tag.startsWith('I-')) expect(out[index - 1]?.slice(2)).toBe(tag.slice(2));
    });
  });
});

describe('NER with open name lists', () => {
  // made-up words: only the lists tell a place from a person
  const places = ['Arvolo', 'Brenmarth', 'Cuzibel', 'Dorvask', 'Elquine', 'Frostemb'];
  const people = ['Gaviron', 'Hulmetz', 'Istrapo', 'Jorumbe', 'Kelvashti', 'Lunderoy'];
  const nameLists = new Map<string, string>([...places, 'Mirovend'].map((word) => [word.toLowerCase(), 'city']));
  for (const word of [...people, 'Nostrux']) nameLists.set(word.toLowerCase(), 'name');
  const pos = ['PRON\tPRP', 'VERB\tVBD', 'PROPN\tNNP', 'PUNCT\t.'];
  const examples: NerExample[] = [...places, ...people].map((word) => ({
    tokens: ['I', 'saw', word, '.'],
    tags: ['O', 'O', places.includes(word) ? 'B-LOC' : 'B-PER', 'O'],
    pos,
  }));

  it('types unseen words by their classes in the lists, and keeps the lists in the model file', () => {
    const model = trainNer(examples, { epochs: 5, seed: 1, bits: 16, gazetteerFolds: 1, lexicon: new Map(), nameLists });
    const file = encodeNer(model, 0);
    expect(file.sections.has('nameLists')).toBe(true);
    const loaded = decodeNer('ner', decodeModelFile('ner', encodeModelFile(file.header, file.sections)));
    for (const tagger of [model, loaded]) {
      expect(tagEntities(tagger, ['I', 'saw', 'Mirovend', '.'], pos)[2]).toBe('B-LOC');
      expect(tagEntities(tagger, ['I', 'saw', 'Nostrux', '.'], pos)[2]).toBe('B-PER');
    }
    // a model trained without lists has no such section and loads with none
    const without = encodeNer(trainNer(examples, { epochs: 1, seed: 1, bits: 10, gazetteerFolds: 1, lexicon: new Map(), nameLists: new Map() }), 0);
    expect(file.sections.size - without.sections.size).toBe(1);
    expect(decodeNer('ner', decodeModelFile('ner', encodeModelFile(without.header, without.sections))).nameLists.size).toBe(0);
  });
});

describe('caseCopies', () => {
  const sentences = Array.from({ length: 200 }, (_, index) => ({
    tokens: ['Jane', 'Doe', 'joined', `Acme${index}`, '.'],
    tags: ['B-PER', 'I-PER', 'O', 'B-ORG', 'O'],
  }));

  it('copies about the asked shares in capitals and in lower case, tags kept, the same sentences every run', () => {
    const copies = caseCopies(sentences, { upper: 0.25, lower: 0.25 });
    const upper = copies.filter((copy) => copy.tokens[0] === 'JANE');
    const lower = copies.filter((copy) => copy.tokens[0] === 'jane');
    expect(upper.length + lower.length).toBe(copies.length);
    for (const share of [upper.length, lower.length]) expect(share).toBeGreaterThan(25);
    for (const share of [upper.length, lower.length]) expect(share).toBeLessThan(75);
    expect(upper[0]!.tokens.join(' ')).toMatch(/^JANE DOE JOINED ACME\d+ \.$/);
    expect(copies.every((copy) => copy.tags.join(' ') === 'B-PER I-PER O B-ORG O')).toBe(true);
    expect(caseCopies(sentences, { upper: 0.25, lower: 0.25 })).toEqual(copies);
    expect(caseCopies(sentences, { upper: 0, lower: 0 })).toEqual([]);
  });

  it('refuses shares below 0 or adding up to more than 1', () => {
    expect(() => caseCopies(sentences, { upper: 0.6, lower: 0.6 })).toThrow(/upper 0.6 and lower 0.6/);
    expect(() => caseCopies(sentences, { upper: -0.1, lower: 0 })).toThrow(RangeError);
  });
});
