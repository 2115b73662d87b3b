import { type Annotation, type AnnotationSentence } from '@loom/domain';

/** One token written as a CoNLL-U-like row: word, lemma, XPOS, UPOS, head (0: root), relation, entity type ('' or 'O': none). */
export type Row = readonly [word: string, lemma: string, xpos: string, upos: string, head: number, relation: string, entity?: string];

/**
 * A loom annotation (CoreNLP JSON plus upos) of hand-written sentences, for tests that put annotations in messages
 * directly: tokens separated by one space, sentences by one space, entity mentions from runs of the same type.
 */
export function annotation(sentences: readonly (readonly Row[])[], docId?: string): Annotation {
  let offset = 0;
  const built: AnnotationSentence[] = sentences.map((rows, index) => {
    const tokens = rows.map(([word, lemma, pos, upos, , , entity], i) => {
      const begin = offset + (i === 0 && index > 0 ? 1 : i === 0 ? 0 : 1);
      offset = begin + word.length;
      return {
        index: i + 1,
        word,
        originalText: word,
        lemma,
        characterOffsetBegin: begin,
        characterOffsetEnd: begin + word.length,
        pos,
        upos,
        ner: entity === undefined || entity === '' ? 'O' : entity,
        before: i === 0 && index === 0 ? '' : ' ',
        after: ' ',
      };
    });
    const basicDependencies = rows.map(([, , , , head, relation], i) => ({
      dep: head === 0 ? 'ROOT' : relation,
      governor: head,
      governorGloss: head === 0 ? 'ROOT' : rows[head - 1]![0],
      dependent: i + 1,
      dependentGloss: rows[i]![0],
    }));
    // the root arc first, as CoreNLP writes it
    basicDependencies.sort((a, b) => (a.governor === 0 ? -1 : b.governor === 0 ? 1 : 0));
    return { index, tokens, basicDependencies };
  });
  return docId === undefined ? { sentences: built } : { docId, sentences: built };
}
