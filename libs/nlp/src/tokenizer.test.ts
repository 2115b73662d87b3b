import { describe, expect, it } from 'vitest';
import { splitWords, tokenize, type TokenizerLexicon } from './tokenizer.js';

const lexicon: TokenizerLexicon = {
  abbreviations: new Set(['dr.', 'mr.', 'u.s.', 'etc.', 'inc.']),
  hyphenated: new Set(['e-mail']),
  multiwordTokens: new Map([
    ['cannot', [3, 3]],
    ['gonna', [3, 2]],
    ['dont', [2, 2]],
  ]),
  hyphenPrefixes: new Set(['non']),
};

function tokens(text: string): string[] {
  const out = tokenize(text, lexicon);
  for (const token of out) expect(text.slice(token.start, token.end)).toBe(token.text);
  return out.map((token) => token.text);
}

function words(text: string): string[] {
  const out = splitWords(tokenize(text, lexicon), lexicon);
  for (const word of out) expect(text.slice(word.start, word.end)).toBe(word.text);
  return out.map((word) => word.text);
}

describe('tokenize (EWT convention)', () => {
  it('keeps clitics inside their token and splits them into words', () => {
    expect(tokens("I don't think I'm late.")).toEqual(['I', "don't", 'think', "I'm", 'late', '.']);
    expect(words("I don't think I'm late.")).toEqual(['I', 'do', "n't", 'think', 'I', "'m", 'late', '.']);
    expect(words("Bush's plan can't work, we'll see")).toEqual(['Bush', "'s", 'plan', 'ca', "n't", 'work', ',', 'we', "'ll", 'see']);
    expect(words('You cannot go, I dont care, gonna leave')).toEqual(['You', 'can', 'not', 'go', ',', 'I', 'do', 'nt', 'care', ',', 'gon', 'na', 'leave']);
    expect(words('It’s fine')).toEqual(['It', '’s', 'fine']);
  });

  it('keeps URLs, e-mail addresses, numbers and emoticons whole', () => {
    expect(tokens('See http://www.example.com/a?b=1, or mail john.doe@enron.com.')).toEqual([
      'See',
      'http://www.example.com/a?b=1',
      ',',
      'or',
      'mail',
      'john.doe@enron.com',
      '.',
    ]);
    expect(tokens('It costs $1,000.50 (about 3.5%) at 3:30pm :) ok')).toEqual([
      'It',
      'costs',
      '$',
      '1,000.50',
      '(',
      'about',
      '3.5',
      '%',
      ')',
      'at',
      '3:30',
      'pm',
      ':)',
      'ok',
    ]);
    expect(tokens('Call 713-853-3989 on 11/28/2000')).toEqual(['Call', '713-853-3989', 'on', '11/28/2000']);
  });
});

describe('tokenize (EWT convention): punctuation and offsets', () => {
  it('keeps known abbreviations and initials, splits a sentence-final period', () => {
    expect(tokens('Dr. Smith of the U.S. met Mr. J. R. Doe, etc. Then left.')).toEqual([
      'Dr.',
      'Smith',
      'of',
      'the',
      'U.S.',
      'met',
      'Mr.',
      'J.',
      'R.',
      'Doe',
      ',',
      'etc.',
      'Then',
      'left',
      '.',
    ]);
  });

  it('splits quotes, brackets and ellipses off words', () => {
    expect(tokens('"Hello," she said... (really?!) \'fine\'')).toEqual([
      '"',
      'Hello',
      ',',
      '"',
      'she',
      'said',
      '...',
      '(',
      'really',
      '?!',
      ')',
      "'",
      'fine',
      "'",
    ]);
    expect(tokens('Wait.... what?? no!!!')).toEqual(['Wait', '....', 'what', '??', 'no', '!!!']);
  });

  it('splits hyphenated compounds except the ones the treebank keeps', () => {
    expect(tokens('a long-term e-mail plan')).toEqual(['a', 'long', '-', 'term', 'e-mail', 'plan']);
    expect(tokens('the non-Microsoft browser')).toEqual(['the', 'non-Microsoft', 'browser']);
    expect(tokens('a 15-year term of 18,000-person agencies, F-16 jets, 5-10 days')).toEqual([
      'a',
      '15',
      '-',
      'year',
      'term',
      'of',
      '18,000',
      '-',
      'person',
      'agencies',
      ',',
      'F-16',
      'jets',
      ',',
      '5-10',
      'days',
    ]);
    expect(tokens('Great service- high class -Page 7')).toEqual(['Great', 'service', '-', 'high', 'class', '-', 'Page', '7']);
  });

  it('splits ellipses inside and before words, keeps runs of end punctuation, emoticons and addresses whole', () => {
    expect(tokens('missing..and past...and ...Now')).toEqual(['missing', '..', 'and', 'past', '...', 'and', '...', 'Now']);
    expect(tokens('look !!! ok :-). "Julie"<julie...@bellsouth.net> file.pdf)(See')).toEqual([
      'look',
      '!!!',
      'ok',
      ':-)',
      '.',
      '"',
      'Julie',
      '"',
      '<',
      'julie...@bellsouth.net',
      '>',
      'file.pdf',
      ')',
      '(',
      'See',
    ]);
  });

  it('gives offsets into the original text across odd whitespace', () => {
    const text = '  Hi\tthere,\n\nworld!  ';
    const out = tokenize(text, lexicon);
    expect(out.map((token) => [token.text, token.start, token.end])).toEqual([
      ['Hi', 2, 4],
      ['there', 5, 10],
      [',', 10, 11],
      ['world', 13, 18],
      ['!', 18, 19],
    ]);
  });
});
