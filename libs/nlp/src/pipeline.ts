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
import { lemmatize, type LemmatizerModel } from './lemmatizer.js';
import { readCard } from './model-card.js';
import { readModelFile, type ModelFile } from './model-file.js';
import { decodeLemmatizerFile, decodeNer, decodeParser, decodeTagger, decodeTokenizer } from './models.js';
import { tagEntities, type NerModel } from './ner.js';
import { parse, UNKNOWN_TAG, type ParserModel } from './parser.js';
import { segmentText, type SplitterModel } from './sentences.js';
import { tagWords, type TaggerModel } from './tagger.js';
import { splitWords, tokenize, type TokenizerLexicon, type Word } from './tokenizer.js';

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

interface Loaded {
  tokenizer?: { lexicon: TokenizerLexicon; splitter: SplitterModel };
  tagger?: TaggerModel;
  lemmatizer?: LemmatizerModel;
  parser?: ParserModel & { tags: string[]; tagCodes: Map<string, number> };
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

  private tagger(): TaggerModel {
    return (this.loaded.tagger ??= decodeTagger('tagger', this.file('tagger')));
  }

  private lemmatizer(): LemmatizerModel {
    return (this.loaded.lemmatizer ??= decodeLemmatizerFile('lemmatizer', this.file('lemmatizer')));
  }

  private parser(): ParserModel & { tags: string[]; tagCodes: Map<string, number> } {
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
    return tagWords(tagger, words).map((labelIndex) => {
      const label = itemAt(tagger.labels, labelIndex, 'tagger.labels');
      const tab = label.indexOf('\t');
      return { upos: label.slice(0, tab), xpos: label.slice(tab + 1), label };
    });
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
   * tagger; `labels` are the words' joint tagger labels (`tag`), tagged here when not given.
   */
  entities(words: readonly string[], labels: readonly string[] = this.tag(words).map((tag) => tag.label)): string[] {
    const tags = tagEntities(this.ner(), words, labels);
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
    const sentences: AnnotationSentence[] = [];
    let docToken = 0;
    const segmented = this.segment(text, run.has('ssplit'));
    segmented.forEach((words, sentenceIndex) => {
      const forms = words.map((word) => word.text);
      const tags = run.has('pos') ? this.tag(forms) : undefined;
      const ner = run.has('ner')
        ? this.entities(
            forms,
            tags?.map((tag) => tag.label),
          )
        : undefined;
      const tokens: AnnotationToken[] = words.map((word, index) => {
        const previous =
          index > 0
            ? words[index - 1]
            : sentenceIndex > 0
              ? itemAt(segmented, sentenceIndex - 1, 'segmented')[itemAt(segmented, sentenceIndex - 1, 'segmented').length - 1]
              : undefined;
        const next = index + 1 < words.length ? words[index + 1] : segmented[sentenceIndex + 1]?.[0];
        const sameTokenBefore = previous !== undefined && previous.token === word.token;
        const sameTokenAfter = next !== undefined && next.token === word.token;
        const tag = tags?.[index];
        return {
          index: index + 1,
          word: word.text,
          originalText: text.slice(word.start, word.end),
          ...(tag && run.has('lemma') ? { lemma: this.lemma(word.text, tag.xpos) } : {}),
          characterOffsetBegin: word.start,
          characterOffsetEnd: word.end,
          ...(tag ? { pos: tag.xpos, upos: tag.upos } : {}),
          ...(ner ? { ner: itemAt(ner, index, 'ner') } : {}),
          before: sameTokenBefore ? '' : text.slice(previous?.end ?? 0, word.start),
          after: sameTokenAfter ? '' : text.slice(word.end, next?.start ?? text.length),
        };
      });
      const sentence: { index: number; tokens: AnnotationToken[]; basicDependencies?: AnnotationDependency[]; entitymentions?: AnnotationEntityMention[] } = {
        index: sentenceIndex,
        tokens,
      };
      if (run.has('depparse') && tags) {
        const { heads, relations } = this.parseWords(
          forms,
          tags.map((tag) => tag.label),
        );
        const arcs: AnnotationDependency[] = heads.map((head, index) => ({
          dep: head === 0 ? ROOT_RELATION : itemAt(relations, index, 'relations'),
          governor: head,
          governorGloss: head === 0 ? ROOT_RELATION : itemAt(forms, head - 1, 'forms'),
          dependent: index + 1,
          dependentGloss: itemAt(forms, index, 'forms'),
        }));
        sentence.basicDependencies = [...arcs.filter((name) => name.governor === 0), ...arcs.filter((name) => name.governor !== 0)];
      }
      if (ner) sentence.entitymentions = mentions(text, tokens, ner, docToken);
      sentences.push(sentence);
      docToken += tokens.length;
    });
    return { ...(options.docId !== undefined ? { docId: options.docId } : {}), sentences };
  }
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
