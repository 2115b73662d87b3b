import { itemAt } from './checked.js';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  NO_ENTITY,
  ROOT_RELATION,
  type Annotation,
  type AnnotationDependency,
  type AnnotationEntityMention,
  type AnnotationSentence,
  type AnnotationToken,
} from '@loom/domain';
import { DictionaryMatcher, type DictionaryEntry } from './dictionary.js';
import { AnnotateOptionError } from './errors.js';
import { entitySpans } from './entity-spans.js';
import { harmoniseDocumentTags } from './document-entities.js';
import { repairEntityTags } from './entity-repair.js';
import { correctPersons } from './person-rules.js';
import { markOrganisations } from './organisation-rules.js';
import { lemmatize, type LemmatizerModel } from './lemmatizer.js';
import { readCard } from './model-card.js';
import { readModelFile, type ModelFile } from './model-file.js';
import { decodeLemmatizerFile, decodeNer, decodeParser, decodeTagger, decodeTokenizer } from './models.js';
import { tagEntities, type NerModel } from './ner.js';
import { parse, UNKNOWN_TAG, type ParserModel } from './parser.js';
import { segmentText, type SplitterModel } from './sentences.js';
import { tagWords, type TaggerModel } from './tagger.js';
import { splitWords, tokenize, type TokenizerLexicon, type Word } from './tokenizer.js';
import { wordCodes, type WordCodes } from './features.js';

/** Annotators, named as CoreNLP names them. */
export const ANNOTATORS = ['tokenize', 'ssplit', 'pos', 'lemma', 'ner', 'depparse'] as const;
export type AnnotatorName = (typeof ANNOTATORS)[number];

const REQUIRES: Record<AnnotatorName, readonly AnnotatorName[]> = {
  tokenize: [],
  ssplit: ['tokenize'],
  pos: ['tokenize', 'ssplit'],
  lemma: ['tokenize', 'ssplit', 'pos'],
  ner: ['tokenize', 'ssplit', 'pos'],
  depparse: ['tokenize', 'ssplit', 'pos'],
};

/** NER types of the statistical tagger as CoreNLP writes them. */
const NER_NAMES: Record<string, string> = { PER: 'PERSON', ORG: 'ORGANIZATION', LOC: 'LOCATION' };

/** Options of annotate(). */
export interface AnnotateOptions {
  /** Annotators to run (comma-separated string or list); their prerequisites are added. Default: all. */
  readonly annotators?: string | readonly string[];
  readonly docId?: string;
}

/** Options of a pipeline. */
export interface PipelineOptions {
  /** Directory with the model files and cards; default: the package's committed models. */
  readonly modelsDir?: string;
  /** Dictionary NER entries, overriding the statistical tagger where they match. */
  readonly dictionary?: readonly DictionaryEntry[];
}

/** The package's committed models directory. */
export function defaultModelsDir(): string {
  return fileURLToPath(new URL('../models/', import.meta.url));
}

/** Resolves the annotator list, naming a wrong entry by its path (`annotators[2]`). */
export function resolveAnnotators(value: AnnotateOptions['annotators']): Set<AnnotatorName> {
  if (value === undefined) return new Set(ANNOTATORS);
  const list: readonly unknown[] =
    typeof value === 'string'
      ? value
          .split(',')
          .map((name) => name.trim())
          .filter((name) => name !== '')
      : value;
  if (!Array.isArray(list)) throw new AnnotateOptionError('annotators', 'must be a string or a list of strings');
  const out = new Set<AnnotatorName>();
  list.forEach((name, index) => {
    if (typeof name !== 'string') throw new AnnotateOptionError(`annotators[${index}]`, 'must be a string');
    if (!(ANNOTATORS as readonly string[]).includes(name))
      throw new AnnotateOptionError(`annotators[${index}]`, `unknown annotator '${String(name)}' (known: ${ANNOTATORS.join(', ')})`);
    for (const required of REQUIRES[name as AnnotatorName]) out.add(required);
    out.add(name as AnnotatorName);
  });
  return out;
}

/** A tagger with each joint label split once into its parts. */
type LoadedTagger = TaggerModel & { readonly upos: readonly string[]; readonly xpos: readonly string[] };

/** A parser with the code of each of its tags, and of each tagger label (by the tagger's label index). */
type LoadedParser = ParserModel & { tags: string[]; tagCodes: Map<string, number>; codeOfTaggerLabel?: Int32Array };

interface Loaded {
  tokenizer?: { lexicon: TokenizerLexicon; splitter: SplitterModel };
  tagger?: LoadedTagger;
  lemmatizer?: LemmatizerModel;
  parser?: LoadedParser;
  ner?: NerModel;
  dictionary?: DictionaryMatcher;
}

/** The NLP pipeline: models are loaded (and checksum-verified) on first use of the annotator needing them. */
export class NlpPipeline {
  readonly modelsDir: string;
  private readonly loaded: Loaded = {};

  constructor(private readonly options: PipelineOptions = {}) {
    this.modelsDir = options.modelsDir ?? defaultModelsDir();
  }

  private file(name: string): ModelFile {
    const card = readCard(this.modelsDir, name);
    return readModelFile(name, join(this.modelsDir, card.file), card.sha256);
  }

  private tokenizer(): { lexicon: TokenizerLexicon; splitter: SplitterModel } {
    return (this.loaded.tokenizer ??= decodeTokenizer('tokenizer', this.file('tokenizer')));
  }

  private tagger(): LoadedTagger {
    if (!this.loaded.tagger) {
      const tagger = decodeTagger('tagger', this.file('tagger'));
      const parts = tagger.labels.map((label) => label.split('\t'));
      this.loaded.tagger = { ...tagger, upos: parts.map((part) => part[0] ?? ''), xpos: parts.map((part) => part[1] ?? '') };
    }
    return this.loaded.tagger;
  }

  private lemmatizer(): LemmatizerModel {
    return (this.loaded.lemmatizer ??= decodeLemmatizerFile('lemmatizer', this.file('lemmatizer')));
  }

  private parser(): LoadedParser {
    if (!this.loaded.parser) {
      const parser = decodeParser('parser', this.file('parser'));
      this.loaded.parser = { ...parser, tagCodes: new Map(parser.tags.map((tag, index) => [tag, index])) };
    }
    return this.loaded.parser;
  }

  private ner(): NerModel {
    return (this.loaded.ner ??= decodeNer('ner', this.file('ner')));
  }

  private dictionary(): DictionaryMatcher | undefined {
    if (!this.options.dictionary || this.options.dictionary.length === 0) return undefined;
    if (!this.loaded.dictionary) {
      const { lexicon } = this.tokenizer();
      this.loaded.dictionary = new DictionaryMatcher(
        this.options.dictionary.map((entry) => ({ words: splitWords(tokenize(entry.term, lexicon), lexicon).map((word) => word.text), type: entry.type })),
      );
    }
    return this.loaded.dictionary;
  }

  /** Loads every model now (to measure load time or fail early). */
  loadAll(): void {
    this.tokenizer();
    this.tagger();
    this.lemmatizer();
    this.parser();
    this.ner();
    this.dictionary();
  }

  /** Splits text into sentences of words (with their surface token indices and offsets). */
  segment(text: string, split = true): Word[][] {
    const { lexicon, splitter } = this.tokenizer();
    return segmentText(text, lexicon, splitter, split);
  }

  /** Tags words: joint labels as [UPOS, XPOS]. */
  tag(words: readonly string[]): { upos: string; xpos: string; label: string }[] {
    const tagger = this.tagger();
    return tagWords(tagger, words).map((labelIndex) => ({
      upos: itemAt(tagger.upos, labelIndex, 'tagger.upos'),
      xpos: itemAt(tagger.xpos, labelIndex, 'tagger.xpos'),
      label: itemAt(tagger.labels, labelIndex, 'tagger.labels'),
    }));
  }

  /** The parser's tag code of each tagger label (by label index), worked out once. */
  private parserTagCodes(): Int32Array {
    const parser = this.parser();
    return (parser.codeOfTaggerLabel ??= Int32Array.from(this.tagger().labels, (label) => parser.tagCodes.get(label) ?? UNKNOWN_TAG));
  }

  /** Lemma of a word with its XPOS. */
  lemma(form: string, xpos: string): string {
    return lemmatize(this.lemmatizer(), form, xpos);
  }

  /** Parses words with their joint tag labels: heads (0 = root) and relations. */
  parseWords(words: readonly string[], labels: readonly string[]): { heads: number[]; relations: string[] } {
    const parser = this.parser();
    const tags = labels.map((label) => parser.tagCodes.get(label) ?? UNKNOWN_TAG);
    const result = parse(parser, { words, tags });
    return { heads: result.heads, relations: result.labels.map((label) => itemAt(parser.labels, label, 'parser.labels')) };
  }

  /**
   * Entity type per word (`PERSON`, …, a dictionary type upper-cased, or `O`), dictionary matches overriding the
   * tagger; `labels` are the words' joint tagger labels (`tag`), tagged here when not given. The words are a document
   * of one sentence (`documentEntities`).
   */
  entities(words: readonly string[], labels: readonly string[] = this.tag(words).map((tag) => tag.label)): string[] {
    return this.wordTypes(words, itemAt(harmoniseDocumentTags([{ tokens: words, tags: this.entityTags(words, labels), labels }]), 0, 'harmonised'));
  }

  /**
   * Entity type per word of each sentence of a document, as `entities` gives them, a name found at one mention keeping
   * its type at the others and a person's surname found after a given name standing for that person
   * (`harmoniseDocumentTags`), as `annotate` does for a text.
   */
  documentEntities(sentences: readonly (readonly string[])[]): string[][] {
    const tagged = sentences.map((words) => {
      const labels = this.tag(words).map((tag) => tag.label);
      return { tokens: words, tags: this.entityTags(words, labels), labels };
    });
    return harmoniseDocumentTags(tagged).map((tags, index) => this.wordTypes(itemAt(sentences, index, 'sentences'), tags));
  }

  /**
   * IOB2 entity tags of a sentence: the tagger's, repaired (`repairEntityTags`, `correctPersons`) and with organisations marked by form; `codes` are the words'
   * codes when the caller has them, `attached` says which words follow the previous one with no space (from the text's
   * offsets) when it has the text.
   */
  private entityTags(words: readonly string[], labels: readonly string[], codes?: WordCodes, attached?: readonly boolean[]): string[] {
    const tagged = tagEntities(this.ner(), words, labels, codes);
    const repaired = correctPersons(words, repairEntityTags(words, tagged, { labels, ...(attached ? { attached } : {}) }), labels);
    return markOrganisations(words, repaired, labels);
  }

  /** Entity type per word of IOB2 tags, dictionary matches overriding them. */
  private wordTypes(words: readonly string[], tags: readonly string[]): string[] {
    const out = words.map(() => NO_ENTITY as string);
    const spans = entitySpans(tags);
    const dictionary = this.dictionary()?.match(words) ?? [];
    for (const span of spans) {
      if (dictionary.some((match) => match.start < span.end && span.start < match.end)) continue;
      for (let position = span.start; position < span.end; position++) out[position] = NER_NAMES[span.type] ?? span.type;
    }
    for (const match of dictionary) for (let position = match.start; position < match.end; position++) out[position] = match.type.toUpperCase();
    return out;
  }

  /** Annotates a text; the shape is the CoreNLP server's JSON plus `upos` (libs/domain `Annotation`). */
  annotate(text: string, options: AnnotateOptions = {}): Annotation {
    if (typeof text !== 'string') throw new AnnotateOptionError('text', 'must be a string');
    const run = resolveAnnotators(options.annotators);
    const steps: Steps = { pos: run.has('pos'), lemma: run.has('lemma'), ner: run.has('ner'), depparse: run.has('depparse') };
    const sentences: AnnotationSentence[] = [];
    let docToken = 0;
    const segmented = this.segment(text, run.has('ssplit'));
    const tagged = segmented.map((words) => this.tagSentence(words, steps));
    const entityTypes = steps.ner ? this.documentTypes(tagged) : undefined;
    for (let sentenceIndex = 0; sentenceIndex < segmented.length; sentenceIndex++) {
      const sentence = this.annotateSentence(
        text,
        segmented,
        sentenceIndex,
        itemAt(tagged, sentenceIndex, 'tagged'),
        entityTypes?.[sentenceIndex],
        steps,
        docToken,
      );
      sentences.push(sentence);
      docToken += sentence.tokens.length;
    }
    return { ...(options.docId !== undefined ? { docId: options.docId } : {}), sentences };
  }

  /** A sentence's forms, their codes and tagger labels (when parts of speech run) and, when entities run, its IOB2 entity tags. */
  private tagSentence(words: readonly Word[], steps: Steps): SentenceTags {
    const forms = words.map((word) => word.text);
    if (!steps.pos) return { forms };
    // Each word's forms are hashed once for the tagger, the NER tagger and the parser.
    const codes = wordCodes(forms);
    const tagger = this.tagger();
    const labels = tagWords(tagger, forms, codes);
    if (!steps.ner) return { forms, codes, labels };
    const labelNames = labels.map((label) => itemAt(tagger.labels, label, 'tagger.labels'));
    const attached = words.map((word, index) => index > 0 && word.start === itemAt(words, index - 1, 'words').end);
    return { forms, codes, labels, labelNames, entityTags: this.entityTags(forms, labelNames, codes, attached) };
  }

  /** Entity type per word of each sentence of a text, its tags made consistent across the text (`harmoniseDocumentTags`). */
  private documentTypes(tagged: readonly SentenceTags[]): string[][] {
    // entities need parts of speech (REQUIRES), so every sentence has its entity tags
    const harmonised = harmoniseDocumentTags(
      tagged.map((sentence) => ({ tokens: sentence.forms, tags: sentence.entityTags ?? sentence.forms.map(() => 'O'), labels: sentence.labelNames })),
    );
    return harmonised.map((tags, index) => this.wordTypes(itemAt(tagged, index, 'tagged').forms, tags));
  }

  /** The annotation of sentence `sentenceIndex` of the segmented text; `docToken` is the document index of its first token. */
  private annotateSentence(
    text: string,
    segmented: readonly Word[][],
    sentenceIndex: number,
    { forms, codes, labels }: SentenceTags,
    ner: readonly string[] | undefined,
    steps: Steps,
    docToken: number,
  ): AnnotationSentence {
    const words = itemAt(segmented, sentenceIndex, 'segmented');
    const tagger = labels ? this.tagger() : undefined;
    const previousSentence = segmented[sentenceIndex - 1];
    const nextSentence = segmented[sentenceIndex + 1];
    const tokens: AnnotationToken[] = new Array<AnnotationToken>(words.length);
    for (let index = 0; index < words.length; index++) {
      const word = itemAt(words, index, 'words');
      const previous = index > 0 ? words[index - 1] : previousSentence?.[previousSentence.length - 1];
      const next = index + 1 < words.length ? words[index + 1] : nextSentence?.[0];
      // Properties are added in the order the annotation's JSON has always had.
      const token: TokenDraft = { index: index + 1, word: word.text, originalText: text.slice(word.start, word.end) };
      const label = labels?.[index];
      if (tagger && label !== undefined && steps.lemma) token.lemma = this.lemma(word.text, itemAt(tagger.xpos, label, 'tagger.xpos'));
      token.characterOffsetBegin = word.start;
      token.characterOffsetEnd = word.end;
      if (tagger && label !== undefined) {
        token.pos = itemAt(tagger.xpos, label, 'tagger.xpos');
        token.upos = itemAt(tagger.upos, label, 'tagger.upos');
      }
      if (ner) token.ner = itemAt(ner, index, 'ner');
      token.before = previous !== undefined && previous.token === word.token ? '' : text.slice(previous?.end ?? 0, word.start);
      token.after = next !== undefined && next.token === word.token ? '' : text.slice(word.end, next?.start ?? text.length);
      tokens[index] = token as AnnotationToken;
    }
    const sentence: { index: number; tokens: AnnotationToken[]; basicDependencies?: AnnotationDependency[]; entitymentions?: AnnotationEntityMention[] } = {
      index: sentenceIndex,
      tokens,
    };
    if (steps.depparse && labels && codes) sentence.basicDependencies = this.dependencies(forms, labels, codes);
    if (ner) sentence.entitymentions = mentions(text, tokens, ner, docToken);
    return sentence;
  }

  /** The basic dependencies of a tagged sentence: the root arc first, then the others in word order. */
  private dependencies(forms: readonly string[], labels: readonly number[], codes: WordCodes): AnnotationDependency[] {
    const parser = this.parser();
    const tagCodes = this.parserTagCodes();
    const result = parse(parser, { words: forms, tags: labels.map((label) => itemAt(tagCodes, label, 'parserTagCodes')), lowerCodes: codes.lower });
    const roots: AnnotationDependency[] = [];
    const others: AnnotationDependency[] = [];
    result.heads.forEach((head, index) => {
      const arc = {
        dep: head === 0 ? ROOT_RELATION : itemAt(parser.labels, itemAt(result.labels, index, 'labels'), 'parser.labels'),
        governor: head,
        governorGloss: head === 0 ? ROOT_RELATION : itemAt(forms, head - 1, 'forms'),
        dependent: index + 1,
        dependentGloss: itemAt(forms, index, 'forms'),
      };
      (head === 0 ? roots : others).push(arc);
    });
    return roots.concat(others);
  }
}

/** A token while its properties are added. */
type TokenDraft = { -readonly [Key in keyof AnnotationToken]?: AnnotationToken[Key] };

/** A sentence's words as the annotation's steps tag them before its tokens are written. */
interface SentenceTags {
  readonly forms: readonly string[];
  readonly codes?: WordCodes;
  /** Tagger label indices. */
  readonly labels?: readonly number[];
  readonly labelNames?: readonly string[];
  readonly entityTags?: readonly string[];
}

/** Which annotators after tokenizing and splitting run. */
interface Steps {
  readonly pos: boolean;
  readonly lemma: boolean;
  readonly ner: boolean;
  readonly depparse: boolean;
}

function mentions(text: string, tokens: readonly AnnotationToken[], ner: readonly string[], docToken: number): AnnotationEntityMention[] {
  const out: AnnotationEntityMention[] = [];
  for (let index = 0; index < ner.length;) {
    if (ner[index] === NO_ENTITY) {
      index++;
      continue;
    }
    let end = index + 1;
    while (end < ner.length && ner[end] === ner[index]) end++;
    const first = itemAt(tokens, index, 'tokens');
    const last = itemAt(tokens, end - 1, 'tokens');
    out.push({
      docTokenBegin: docToken + index,
      docTokenEnd: docToken + end,
      tokenBegin: index,
      tokenEnd: end,
      text: text.slice(first.characterOffsetBegin, last.characterOffsetEnd),
      characterOffsetBegin: first.characterOffsetBegin,
      characterOffsetEnd: last.characterOffsetEnd,
      ner: itemAt(ner, index, 'ner'),
    });
    index = end;
  }
  return out;
}
