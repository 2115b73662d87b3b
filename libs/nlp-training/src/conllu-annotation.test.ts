import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { annotationFromConllu } from './conllu-annotation.js';
import { parseConllu } from './conllu.js';
import { testDataDir } from './data-dir.js';
import { entitySpans } from '@loom/nlp';
import { parseIob } from './iob.js';

const SAMPLE = `# sent_id = s1
# text = Ada Lovelace didn't work for IBM.
1	Ada	Ada	PROPN	NNP	_	4	nsubj	_	_
2	Lovelace	Lovelace	PROPN	NNP	_	1	flat	_	_
3-4	didn't	_	_	_	_	_	_	_	_
3	did	do	AUX	VBD	_	5	aux	_	_
4	n't	not	PART	RB	_	5	advmod	_	_
5	work	work	VERB	VB	_	0	root	_	_
6	for	for	ADP	IN	_	7	case	_	_
7	IBM	IBM	PROPN	NNP	_	5	obl	_	SpaceAfter=No
8	.	.	PUNCT	.	_	5	punct	_	_

# sent_id = s2
# text = Hi!
1	Hi	hi	INTJ	UH	_	0	root	_	SpaceAfter=No
2	!	!	PUNCT	.	_	1	punct	_	_
`;

const ENTITIES = `# sent_id = s1
1	Ada	B-PER	-	-
2	Lovelace	I-PER	-	-
3	did	O	-	-
4	n't	O	-	-
5	work	O	-	-
6	for	O	-	-
7	IBM	B-ORG	-	-
8	.	O	-	-
`;

describe('annotationFromConllu', () => {
  it('makes the annotation JSON of gold sentences and entities: offsets into the joined text, words, arcs and mentions', () => {
    const entities = new Map(parseIob(ENTITIES).map((sentence) => [sentence.sentId!, sentence]));
    const annotation = annotationFromConllu(parseConllu(SAMPLE), { docId: 'doc', entities });
    const text = "Ada Lovelace didn't work for IBM. Hi!";
    const [first, second] = annotation.sentences;
    expect(annotation.docId).toBe('doc');
    for (const token of [...first!.tokens, ...second!.tokens]) {
      expect(text.slice(token.characterOffsetBegin, token.characterOffsetEnd)).toBe(token.originalText);
    }
    expect(first!.tokens.map((token) => [token.word, token.lemma, token.pos, token.upos, token.ner])).toContainEqual(["n't", 'not', 'RB', 'PART', 'O']);
    expect(first!.basicDependencies![0]).toEqual({ dep: 'ROOT', governor: 0, governorGloss: 'ROOT', dependent: 5, dependentGloss: 'work' });
    expect(first!.basicDependencies).toHaveLength(8);
    expect(first!.entitymentions!.map((mention) => [mention.text, mention.ner, mention.characterOffsetBegin, mention.characterOffsetEnd])).toEqual([
      ['Ada Lovelace', 'PERSON', 0, 12],
      ['IBM', 'ORGANIZATION', 29, 32],
    ]);
    expect(second!.tokens.map((token) => [token.before, token.word, token.after])).toEqual([
      [' ', 'Hi', ''],
      ['', '!', ' '],
    ]);
    expect(second!.entitymentions).toEqual([]);
  });

  it('converts the whole EWT dev set joined with UNER dev: every sentence, word and arc', () => {
    const data = testDataDir();
    const sentences = parseConllu(readFileSync(join(data, 'ud-english-ewt', 'en_ewt-ud-dev.conllu'), 'utf8'));
    const uner = parseIob(readFileSync(join(data, 'uner-english-ewt', 'en_ewt-ud-dev.iob2'), 'utf8'));
    const entities = new Map(uner.map((sentence) => [sentence.sentId!, sentence]));
    const annotation = annotationFromConllu(sentences, { entities, source: 'en_ewt-ud-dev.conllu' });
    const words = sentences.reduce((sum, sentence) => sum + sentence.words.length, 0);
    expect(annotation.sentences).toHaveLength(sentences.length);
    expect(annotation.sentences.reduce((sum, sentence) => sum + sentence.tokens.length, 0)).toBe(words);
    expect(annotation.sentences.reduce((sum, sentence) => sum + sentence.basicDependencies!.length, 0)).toBe(words);
    // every UNER entity becomes one mention
    const goldEntities = uner.reduce((sum, sentence) => sum + entitySpans(sentence.tags).length, 0);
    expect(annotation.sentences.reduce((sum, sentence) => sum + sentence.entitymentions!.length, 0)).toBe(goldEntities);
  });
});
