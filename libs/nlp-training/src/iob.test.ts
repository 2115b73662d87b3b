import { describe, expect, it } from 'vitest';
import { CorpusFormatError, entitySpans } from '@loom/nlp';
import { normaliseTags, parseIob } from './iob.js';

describe('parseIob', () => {
  it('reads UNER files: sent_id, text, token and tag columns', () => {
    const text = [
      '# sent_id = s1',
      '# text = in tampa bay , Bob',
      '1\tin\tO\t-\t-',
      '2\ttampa\tB-LOC\t-\tstephen',
      '3\tbay\tI-LOC\t-\tstephen',
      '4\t,\tO\t-\t-',
      '5\tBob\tB-PER\t-\t-',
      '',
    ].join('\n');
    const [sentence] = parseIob(text);
    expect(sentence!.sentId).toBe('s1');
    expect(sentence!.text).toBe('in tampa bay , Bob');
    expect(sentence!.tokens).toEqual(['in', 'tampa', 'bay', ',', 'Bob']);
    expect(entitySpans(sentence!.tags)).toEqual([
      { start: 1, end: 3, type: 'LOC' },
      { start: 4, end: 5, type: 'PER' },
    ]);
  });

  it('reads two-column files and converts IOB1 to IOB2', () => {
    const text = 'The I-ORG\nMad I-ORG\nCapsule I-ORG\nB-ORG\tB-ORG\n. O\n\nHi O\n';
    const sentences = parseIob(text, { scheme: 'iob1' });
    expect(sentences).toHaveLength(2);
    expect(sentences[0]!.tags).toEqual(['B-ORG', 'I-ORG', 'I-ORG', 'B-ORG', 'O']);
    expect(entitySpans(sentences[0]!.tags)).toEqual([
      { start: 0, end: 3, type: 'ORG' },
      { start: 3, end: 4, type: 'ORG' },
    ]);
  });

  it('repairs an I- tag that cannot continue into a B- tag', () => {
    expect(normaliseTags(['O', 'I-PER', 'I-LOC', 'I-LOC'])).toEqual(['O', 'B-PER', 'B-LOC', 'I-LOC']);
  });

  it('names the line of a bad tag', () => {
    expect(() => parseIob('a O\nb X-PER\n', { source: 'x.conll' })).toThrow(CorpusFormatError);
    expect(() => parseIob('a O\nb X-PER\n', { source: 'x.conll' })).toThrow("x.conll:2: tag 'X-PER' is not O, B-TYPE or I-TYPE");
  });
});
