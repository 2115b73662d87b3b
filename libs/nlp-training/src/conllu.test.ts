import { describe, expect, it } from 'vitest';
import { parseConllu, surfaceTokens } from './conllu.js';
import { CorpusFormatError } from '@loom/nlp';

const SAMPLE = [
  '# newdoc id = doc1',
  '# sent_id = doc1-0001',
  "# text = I don't know.",
  '1\tI\tI\tPRON\tPRP\tCase=Nom\t4\tnsubj\t4:nsubj\t_',
  "2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_",
  '2\tdo\tdo\tAUX\tVBP\t_\t4\taux\t4:aux\t_',
  "3\tn't\tnot\tPART\tRB\t_\t4\tadvmod\t4:advmod\t_",
  '4\tknow\tknow\tVERB\tVB\t_\t0\troot\t0:root\tSpaceAfter=No',
  '4.1\tknow\tknow\tVERB\tVB\t_\t_\t_\t4:conj\tCopyOf=4',
  '5\t.\t.\tPUNCT\t.\t_\t4\tpunct\t4:punct\t_',
  '',
  '# newpar',
  '# sent_id = doc1-0002',
  '# text = Hi',
  '1\tHi\thi\tINTJ\tUH\t_\t0\troot\t0:root\t_',
  '',
].join('\n');

describe('parseConllu', () => {
  it('reads sentence ids, text, words, heads, relations and multi-word token ranges', () => {
    const [first, second] = parseConllu(SAMPLE);
    expect(first!.sentId).toBe('doc1-0001');
    expect(first!.text).toBe("I don't know.");
    expect(first!.newDoc).toBe(true);
    expect(first!.words.map((word) => [word.id, word.form, word.head, word.deprel])).toEqual([
      [1, 'I', 4, 'nsubj'],
      [2, 'do', 4, 'aux'],
      [3, "n't", 4, 'advmod'],
      [4, 'know', 0, 'root'],
      [5, '.', 4, 'punct'],
    ]);
    expect(first!.multiwordTokens).toEqual([{ first: 2, last: 3, form: "don't", misc: '_' }]);
    expect(second!.newPar).toBe(true);
    expect(second!.newDoc).toBe(false);
    expect(second!.words[0]!.upos).toBe('INTJ');
  });

  it('lists surface tokens with their word ranges and SpaceAfter', () => {
    const [first] = parseConllu(SAMPLE);
    expect(surfaceTokens(first!)).toEqual([
      { form: 'I', first: 1, last: 1, spaceAfter: true },
      { form: "don't", first: 2, last: 3, spaceAfter: true },
      { form: 'know', first: 4, last: 4, spaceAfter: false },
      { form: '.', first: 5, last: 5, spaceAfter: true },
    ]);
  });

  it('names the line of a malformed word', () => {
    const bad = '# sent_id = x\n1\tHi\thi\tINTJ\tUH\t_\t0\troot\n';
    expect(() => parseConllu(bad, 'bad.conllu')).toThrow(CorpusFormatError);
    expect(() => parseConllu(bad, 'bad.conllu')).toThrow('bad.conllu:2: expected 10 tab-separated columns, found 8');
    const outOfOrder = '1\tA\ta\tX\tX\t_\t0\troot\t_\t_\n3\tB\tb\tX\tX\t_\t1\tdep\t_\t_\n';
    expect(() => parseConllu(outOfOrder, 'o.conllu')).toThrow('o.conllu:2: word ID 3 out of order (expected 2)');
  });
});
