import { type Annotation, type AnnotationDependency, type AnnotationToken } from '@loom/domain';

const FUNCTION_WORDS: Record<string, string> = {
  a: 'DT',
  an: 'DT',
  the: 'DT',
  this: 'DT',
  each: 'DT',
  that: 'IN',
  of: 'IN',
  on: 'IN',
  in: 'IN',
  inside: 'IN',
  during: 'IN',
  for: 'IN',
  from: 'IN',
  with: 'IN',
  without: 'IN',
  because: 'IN',
  so: 'IN',
  unless: 'IN',
  when: 'WRB',
  to: 'TO',
  and: 'CC',
  or: 'CC',
  its: 'PRP$',
  it: 'PRP',
  not: 'RB',
  sooner: 'RBR',
  incorrectly: 'RB',
  clearly: 'RB',
  approximately: 'RB',
  was: 'VBD',
  were: 'VBD',
  had: 'VBD',
  is: 'VBZ',
  be: 'VB',
  are: 'VBP',
  may: 'MD',
  should: 'MD',
  cannot: 'MD',
  can: 'MD',
  enable: 'VBP',
  steer: 'VB',
  slow: 'VB',
  found: 'VBN',
  led: 'VBD',
  built: 'VBN',
  installed: 'VBN',
  stemmed: 'VBD',
  operate: 'VB',
  certified: 'VBN',
  implemented: 'VBN',
  accommodates: 'VBZ',
  fabricated: 'VBN',
  prevent: 'VB',
  assembled: 'VBN',
  cause: 'VB',
  'mistake-proofed': 'VBN',
  learned: 'VBN',
  able: 'JJ',
  unusual: 'JJ',
  critical: 'JJ',
  near: 'JJ',
  identical: 'JJ',
  different: 'JJ',
  robust: 'JJ',
  original: 'JJ',
  new: 'JJ',
  dedicated: 'JJ',
  physical: 'JJ',
  incorrect: 'JJ',
  mechanical: 'JJ',
  initial: 'JJ',
  evident: 'JJ',
  focus: 'NN',
};

/**
 * A CoreNLP-shaped annotation built by simple rules (a closed-class lexicon, nouns by default,
 * plural -s lemmas, compound and amod arcs between neighbouring modifiers and nouns), so TextRank
 * can be tested on real text without a trained parser.
 */
export function constructedAnnotation(text: string): Annotation {
  const sentences: Annotation['sentences'][number][] = [];
  const sentencePattern = /[^.!?]+[.!?]/g;
  for (const match of text.matchAll(sentencePattern)) {
    const offset = match.index;
    const tokens: AnnotationToken[] = [];
    for (const word of match[0].matchAll(/[\p{L}\p{N}]+(?:[-'][\p{L}\p{N}]+)*|[^\s\p{L}\p{N}]/gu)) {
      const begin = offset + word.index;
      const value = word[0];
      const lower = value.toLowerCase();
      let pos = FUNCTION_WORDS[lower] ?? (/^\d/.test(value) ? 'CD' : /^[^\p{L}]$/u.test(value) ? '.' : 'NN');
      if (pos === 'NN' && /^\p{Lu}/u.test(value) && tokens.length > 0) pos = 'NNP';
      if (pos === 'NN' && /[^s]s$/.test(lower) && lower.length > 3) pos = 'NNS';
      const lemma = pos === 'NNS' ? lower.slice(0, -1) : lower;
      tokens.push({
        index: tokens.length + 1,
        word: value,
        originalText: value,
        lemma,
        characterOffsetBegin: begin,
        characterOffsetEnd: begin + value.length,
        pos,
        ner: pos === 'CD' ? 'NUMBER' : 'O',
        before: ' ',
        after: ' ',
      });
    }
    const dependencies: AnnotationDependency[] = [{ dep: 'ROOT', governor: 0, governorGloss: 'ROOT', dependent: 1, dependentGloss: tokens[0]?.word ?? '' }];
    tokens.forEach((token, i) => {
      const next = tokens[i + 1];
      if (next === undefined || !next.pos?.startsWith('NN')) return;
      if (token.pos?.startsWith('NN')) dependencies.push(arc('compound', next, token));
      else if (token.pos?.startsWith('JJ')) dependencies.push(arc('amod', next, token));
    });
    sentences.push({ index: sentences.length, tokens, basicDependencies: dependencies });
  }
  return { sentences };
}

function arc(dep: string, head: AnnotationToken, dependent: AnnotationToken): AnnotationDependency {
  return { dep, governor: head.index, governorGloss: head.word, dependent: dependent.index, dependentGloss: dependent.word };
}
