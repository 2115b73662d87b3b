import { entryOf, itemAt, CorpusFormatError, entitySpans, type EntitySpan } from '@loom/nlp';
import { type Annotation, type AnnotationEntityMention, type AnnotationSentence, type AnnotationToken, NO_ENTITY, ROOT_RELATION } from '@loom/domain';
import { type ConlluSentence, surfaceTokens } from './conllu.js';
import { type IobSentence } from './iob.js';

/** UNER's entity types as CoreNLP (and so loom's annotation) names them; other types are kept, upper-cased. */
const ENTITY_TYPES: Readonly<Record<string, string>> = { PER: 'PERSON', ORG: 'ORGANIZATION', LOC: 'LOCATION' };

/** Options of annotationFromConllu. */
export interface ConlluAnnotationOptions {
  /** The document id (`docId`) of the annotation. */
  readonly docId?: string;
  /** Gold entities by `sent_id` (UNER's IOB2 file, parsed); a sentence without an entry has none. */
  readonly entities?: ReadonlyMap<string, IobSentence>;
  /** Names the corpus in errors. */
  readonly source?: string;
}

/**
 * Turns gold CoNLL-U sentences (and, joined by `sent_id`, gold UNER entities) into loom's annotation JSON (the
 * CoreNLP shape plus upos, as the v2 annotation endpoint answers): one document whose text is the sentences' surface
 * text joined by single spaces, one token per syntactic word, the basic dependencies of the treebank and the
 * entities as `ner` and `entitymentions`. The words of a multi-word token share its characters when their forms do
 * not spell it out. A CorpusFormatError names a sentence whose entities spell other characters than its words.
 */
export function annotationFromConllu(sentences: readonly ConlluSentence[], options: ConlluAnnotationOptions = {}): Annotation {
  const source = options.source ?? 'conllu';
  let offset = 0;
  const built = sentences.map((sentence, index): AnnotationSentence => {
    if (index > 0) offset += 1; // the space between two sentences
    const spans = new Map<number, { begin: number; end: number; after: string }>();
    const surfaces = surfaceTokens(sentence);
    surfaces.forEach((surface, surfaceIndex) => {
      const begin = offset;
      offset += surface.form.length;
      const after = surfaceIndex === surfaces.length - 1 ? ' ' : surface.spaceAfter ? ' ' : '';
      const words = sentence.words.slice(surface.first - 1, surface.last);
      const spelled = words.map((word) => word.form).join('') === surface.form;
      let cursor = begin;
      for (const word of words) {
        const end = spelled ? cursor + word.form.length : offset;
        spans.set(word.id, { begin: spelled ? cursor : begin, end, after: word.id === surface.last ? after : '' });
        cursor = end;
      }
      if (surfaceIndex < surfaces.length - 1 && surface.spaceAfter) offset += 1;
    });

    const { tags, spans: entities } = entityTags(sentence, options.entities, source);
    const tokens = sentence.words.map((word, wordIndex): AnnotationToken => {
      const span = entryOf(spans, word.id, 'word spans');
      const previous = wordIndex === 0 ? undefined : spans.get(itemAt(sentence.words, wordIndex - 1, 'sentence.words').id);
      const before = previous === undefined ? (index === 0 ? '' : ' ') : previous.after;
      const token: AnnotationToken = {
        index: word.id,
        word: word.form,
        originalText: word.form,
        lemma: word.lemma,
        characterOffsetBegin: span.begin,
        characterOffsetEnd: span.end,
        pos: word.xpos,
        upos: word.upos,
        ner: tags[wordIndex] ?? NO_ENTITY,
        before,
        after: span.after,
      };
      return token;
    });
    const root = sentence.words.filter((word) => word.head === 0);
    const arcs = [...root, ...sentence.words.filter((word) => word.head !== 0)];
    const basicDependencies = arcs.map((word) => ({
      dep: word.head === 0 ? ROOT_RELATION : word.deprel,
      governor: word.head,
      governorGloss: word.head === 0 ? ROOT_RELATION : (sentence.words[word.head - 1]?.form ?? ''),
      dependent: word.id,
      dependentGloss: word.form,
    }));
    const mentions = entities.map((span): AnnotationEntityMention => {
      const first = itemAt(tokens, span.start, 'tokens');
      const last = itemAt(tokens, span.end - 1, 'tokens');
      return {
        docTokenBegin: span.start,
        docTokenEnd: span.end,
        tokenBegin: span.start,
        tokenEnd: span.end,
        text: tokens
          .slice(span.start, span.end)
          .map((token, position) => (position === 0 ? '' : token.before) + token.originalText)
          .join(''),
        characterOffsetBegin: first.characterOffsetBegin,
        characterOffsetEnd: last.characterOffsetEnd,
        ner: span.type,
      };
    });
    return { index, tokens, basicDependencies, entitymentions: mentions };
  });
  return options.docId === undefined ? { sentences: built } : { docId: options.docId, sentences: built };
}

/** The entity type of each word of the sentence (CoreNLP names) or `O`, and the entity spans over word positions. */
function entityTags(sentence: ConlluSentence, entities: ReadonlyMap<string, IobSentence> | undefined, source: string): { tags: string[]; spans: EntitySpan[] } {
  const gold = sentence.sentId === undefined ? undefined : entities?.get(sentence.sentId);
  if (gold === undefined) return { tags: sentence.words.map(() => NO_ENTITY), spans: [] };
  // UNER and the treebank may split a few tokens differently: each word takes the entity of the UNER token its first
  // character falls in, which needs both to spell the same characters
  const words = sentence.words.map((word) => word.form);
  if (words.join('') !== gold.tokens.join('')) {
    throw new CorpusFormatError(source, sentence.line, `the entities of sentence ${sentence.sentId} spell other characters than its words`);
  }
  const owner: number[] = [];
  gold.tokens.forEach((token, tokenIndex) => {
    for (let character = 0; character < token.length; character++) owner.push(tokenIndex);
  });
  const goldSpans = entitySpans(gold.tags);
  const spanOfToken = new Map<number, number>();
  goldSpans.forEach((span, spanIndex) => {
    for (let tokenIndex = span.start; tokenIndex < span.end; tokenIndex++) spanOfToken.set(tokenIndex, spanIndex);
  });
  const tags = sentence.words.map((): string => NO_ENTITY);
  const spans: EntitySpan[] = [];
  let position = 0;
  let open: { span: number; start: number } | undefined;
  const close = (end: number): void => {
    if (open === undefined) return;
    const type = itemAt(goldSpans, open.span, 'goldSpans').type;
    spans.push({ start: open.start, end, type: ENTITY_TYPES[type] ?? type.toUpperCase() });
    open = undefined;
  };
  words.forEach((form, wordIndex) => {
    const span = spanOfToken.get(itemAt(owner, position, 'owner'));
    position += form.length;
    if (open !== undefined && open.span !== span) close(wordIndex);
    if (span !== undefined && open === undefined) open = { span, start: wordIndex };
  });
  close(words.length);
  for (const span of spans) for (let tagPosition = span.start; tagPosition < span.end; tagPosition++) tags[tagPosition] = span.type;
  return { tags, spans };
}
