import { type Annotation, type AnnotationToken } from '@loom/domain';

/** TextRank settings, with GraphAware neo4j-nlp's names and defaults. */
export interface TextRankOptions {
  /** PageRank iterations at most. */
  readonly iterations: number;
  /** Damping factor. */
  readonly damp: number;
  /** PageRank stops once no score moves more than this. */
  readonly threshold: number;
  /** Words left out of the co-occurrence graph, and out of keywords when `removeStopwords`. */
  readonly stopwords: ReadonlySet<string>;
  readonly removeStopwords: boolean;
  /** Co-occurrence edges point from a word to the next only (else both ways). */
  readonly respectDirections: boolean;
  /** Words co-occur only within a sentence (else the last word of a sentence links to the first of the next). */
  readonly respectSentences: boolean;
  /** Modifiers (`allowedDependencies`) join words into key phrases and keep a phrase whose head is not top-ranked. */
  readonly useDependencies: boolean;
  /** The graph PageRank runs on is built from dependency arcs instead of word order. */
  readonly dependenciesGraph: boolean;
  /** Share of the ranked words that are keyword candidates (1/3). */
  readonly topXTags: number;
  /** Drops single words found inside a key phrase and, with dependencies, keeps only the top share. */
  readonly cleanKeywords: boolean;
  /** Penn tags a word needs to enter a co-occurrence edge. */
  readonly admittedPOSs: ReadonlySet<string>;
  /** Penn tags that keep a word out of the graph. */
  readonly forbiddenPOSs: ReadonlySet<string>;
  /** Entity types (CoreNLP names: NUMBER, DATE …) that keep a word out of the graph and of keywords. */
  readonly forbiddenNEs: ReadonlySet<string>;
  /** Dependency relations that relate a modifier to its head for key phrases (neo4j-nlp: COMPOUND, AMOD). */
  readonly allowedDependencies: ReadonlySet<string>;
}

/** A keyword or key phrase with its relevance (summed PageRank of its words). */
export interface Keyword {
  readonly value: string;
  readonly relevance: number;
}

/** neo4j-nlp's medium stop-word list, its default. */
export const DEFAULT_STOPWORDS: readonly string[] = (
  'now later least well always new old good better best great bad worse worst much more less several larger smaller big lower widely highly many few ' +
  'with without via therefore furthermore whose whether though although to not of prior instead upon every together across toward towards since ' +
  'around along onto into already whilst while than then anyway whole thus throughout through during above below use due do be have got might may ' +
  'shall can could would will such like other another far away'
).split(' ');

/** neo4j-nlp's defaults. */
export const DEFAULT_TEXTRANK_OPTIONS: TextRankOptions = {
  iterations: 30,
  damp: 0.85,
  threshold: 0.0001,
  stopwords: new Set(DEFAULT_STOPWORDS),
  removeStopwords: true,
  respectDirections: false,
  respectSentences: false,
  useDependencies: true,
  dependenciesGraph: false,
  topXTags: 1 / 3,
  cleanKeywords: true,
  admittedPOSs: new Set(['NN', 'NNS', 'NNP', 'NNPS', 'JJ', 'JJR', 'JJS']),
  forbiddenPOSs: new Set(['CC', 'CD', 'DT', 'EX', 'IN', 'LS', 'MD', 'PDT', 'PRP', 'PRP$', 'RP', 'RB', 'RBR', 'RBS', 'TO', 'UH', 'WDT', 'WP', 'WP$', 'WRB']),
  forbiddenNEs: new Set(['NUMBER', 'ORDINAL', 'PERCENT', 'DATE', 'DURATION']),
  allowedDependencies: new Set(['compound', 'amod']),
};

/** One token of the document as TextRank sees it (a TagOccurrence in neo4j-nlp's model). */
interface Occurrence {
  /** The tag: the lower-cased lemma. */
  readonly tag: string;
  readonly start: number;
  readonly end: number;
  readonly pos: string;
  readonly ner: string;
  /** Tags of heads this token modifies through an allowed dependency, each with that head's occurrence. */
  readonly related: Set<string>;
}

/** Co-occurrence counts: source tag → destination tag → count and the (source start, destination start) pairs. */
type CoOccurrences = Map<string, Map<string, { count: number; starts: Array<[number, number]> }>>;

const PUNCTUATION_TAGS = new Set(['.', ',', ':', '``', "''", '-LRB-', '-RRB-', '#', '$', 'HYPH', 'NFP', '-LSB-', '-RSB-', '-LCB-', '-RCB-']);

/**
 * Keywords of an annotated text by TextRank as GraphAware neo4j-nlp computes it: a
 * co-occurrence graph of admitted words, weighted PageRank, the top share of the words as
 * candidates, neighbouring candidates (and, with dependencies, their modifiers) merged into key
 * phrases, then cleaned. Most relevant first.
 */
export function textRank(annotation: Annotation, options: TextRankOptions = DEFAULT_TEXTRANK_OPTIONS): Keyword[] {
  const parsed = annotation.sentences.map((sentence) => occurrencesOf(sentence.tokens, sentence.basicDependencies ?? [], options));
  const sentences = parsed.map((sentence) => sentence.words);
  const graphWords = sentences.map((words) => words.filter((word) => inGraph(word, options)));

  let coOccurrences = options.dependenciesGraph
    ? dependencyCoOccurrences(
        parsed.flatMap((sentence) => sentence.arcs),
        options,
      )
    : wordOrderCoOccurrences(graphWords, options);
  if (coOccurrences.size === 0) return [];
  const ranks = pageRank(coOccurrences, options);
  // with a dependency graph, phrases are still merged along the natural word order
  if (options.dependenciesGraph) coOccurrences = wordOrderCoOccurrences(graphWords, options);

  const topCount = Math.trunc(ranks.size * options.topXTags);
  const top = new Set(
    [...ranks.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, topCount)
      .map(([tag]) => tag),
  );

  const items = sentences
    .flat()
    .filter((word) => !options.forbiddenNEs.has(word.ner))
    .filter((word) => !(options.removeStopwords && options.stopwords.has(word.tag)))
    .sort((a, b) => a.start - b.start);
  const firstByTag = new Map<string, { tag: string; related: Set<string> }>();
  for (const item of items) {
    const known = firstByTag.get(item.tag);
    if (known === undefined) firstByTag.set(item.tag, { tag: item.tag, related: new Set(item.related) });
    else for (const tag of item.related) known.related.add(tag);
  }

  const found = new Map<string, { value: string; relevance: number; words: number }>();
  for (let first = items.shift(); first !== undefined; first = items.shift()) {
    let current: Occurrence | undefined = first;
    let value = first.tag;
    let relevance = ranks.get(first.tag) ?? 0;
    let topRated = 0;
    const relatedTop = [...relatedInDepth(first, items)].filter((tag) => top.has(tag));
    if (!options.useDependencies && !top.has(first.tag)) continue;
    if (options.useDependencies && !top.has(first.tag) && relatedTop.length === 0) continue;
    if (top.has(first.tag)) topRated += 1;
    let candidates: string[];
    do {
      const endPosition: number = current.end;
      candidates = nextCandidates(current, coOccurrences, firstByTag, options);
      if (candidates.length === 0) break;
      current = undefined;
      for (const candidate of candidates) {
        const next = items[0];
        if (next === undefined || next.tag !== candidate) continue;
        if (!(top.has(next.tag) || options.useDependencies) || next.start - endPosition !== 1) continue;
        value = `${value} ${candidate}`;
        relevance += ranks.get(candidate) ?? 0;
        if (top.has(next.tag)) topRated += 1;
        current = next;
        items.shift();
      }
    } while (current !== undefined);
    if (topRated > 0 && !found.has(value)) found.set(value, { value, relevance, words: value.split(' ').length });
  }

  let keywords = [...found.values()];
  if (options.cleanKeywords) {
    keywords = keywords.filter((keyword) => !(keyword.words === 1 && keywords.some((other) => other.words > 1 && other.value.includes(keyword.value))));
    if (options.useDependencies) keywords = keywords.sort((a, b) => b.relevance - a.relevance).slice(0, topCount);
  }
  return keywords.sort((a, b) => b.relevance - a.relevance || a.value.localeCompare(b.value)).map(({ value, relevance }) => ({ value, relevance }));
}

/** The words of a sentence, punctuation left out, and its dependency arcs between them (earlier word first). */
function occurrencesOf(
  tokens: readonly AnnotationToken[],
  dependencies: NonNullable<Annotation['sentences'][number]['basicDependencies']>,
  options: TextRankOptions,
): { words: Occurrence[]; arcs: Array<[Occurrence, Occurrence]> } {
  const words = tokens.map((token) => ({
    tag: (token.lemma ?? token.word).toLowerCase(),
    start: token.characterOffsetBegin,
    end: token.characterOffsetEnd,
    pos: token.pos ?? '',
    ner: token.ner ?? 'O',
    related: new Set<string>(),
    punctuation: token.upos === 'PUNCT' || PUNCTUATION_TAGS.has(token.pos ?? '') || !/[\p{L}\p{N}]/u.test(token.word),
  }));
  const arcs: Array<[Occurrence, Occurrence]> = [];
  for (const arc of dependencies) {
    const [first, second] = [words[arc.governor - 1], words[arc.dependent - 1]].sort((a, b) => (a?.start ?? 0) - (b?.start ?? 0));
    if (first !== undefined && second !== undefined && !first.punctuation && !second.punctuation) arcs.push([first, second]);
    if (!options.allowedDependencies.has(arc.dep.split(':')[0]!.toLowerCase()) && !options.allowedDependencies.has(arc.dep.toLowerCase())) continue;
    const modifier = words[arc.dependent - 1];
    const head = words[arc.governor - 1];
    if (modifier === undefined || head === undefined) continue;
    // the head counts when its part of speech is admitted (or unknown) and it is no stop word
    if (head.pos !== '' && !options.admittedPOSs.has(head.pos)) continue;
    if (options.stopwords.has(head.tag)) continue;
    modifier.related.add(head.tag);
  }
  return { words: words.filter((word) => !word.punctuation), arcs };
}

/** A word enters the co-occurrence graph when longer than two characters, no stop word, of no forbidden part of speech or entity type. */
function inGraph(word: Occurrence, options: TextRankOptions): boolean {
  return word.tag.length > 2 && !options.stopwords.has(word.tag) && !options.forbiddenPOSs.has(word.pos) && !options.forbiddenNEs.has(word.ner);
}

function admitted(word: Occurrence, options: TextRankOptions): boolean {
  return word.pos === '' || options.admittedPOSs.has(word.pos);
}

function addCoOccurrence(graph: CoOccurrences, source: Occurrence, destination: Occurrence): void {
  let row = graph.get(source.tag);
  if (row === undefined) {
    row = new Map<string, { count: number; starts: Array<[number, number]> }>();
    graph.set(source.tag, row);
  }
  const entry = row.get(destination.tag);
  if (entry === undefined) row.set(destination.tag, { count: 1, starts: [[source.start, destination.start]] });
  else {
    entry.count += 1;
    entry.starts.push([source.start, destination.start]);
  }
}

/** Neighbouring graph words, both admitted, co-occur (across sentences unless `respectSentences`). */
function wordOrderCoOccurrences(sentences: readonly Occurrence[][], options: TextRankOptions): CoOccurrences {
  const graph: CoOccurrences = new Map();
  const sequences = options.respectSentences ? sentences : [sentences.flat()];
  for (const words of sequences) {
    for (let i = 0; i + 1 < words.length; i += 1) {
      const first = words[i]!;
      const second = words[i + 1]!;
      if (!admitted(first, options) || !admitted(second, options)) continue;
      addCoOccurrence(graph, first, second);
      if (!options.respectDirections) addCoOccurrence(graph, second, first);
    }
  }
  return graph;
}

/** Words joined by any dependency arc co-occur, earlier word first (neo4j-nlp's `dependenciesGraph`). */
function dependencyCoOccurrences(arcs: ReadonlyArray<readonly [Occurrence, Occurrence]>, options: TextRankOptions): CoOccurrences {
  const graph: CoOccurrences = new Map();
  for (const [first, second] of arcs) {
    // neo4j-nlp applies only the length rule and the admitted parts of speech here, no stop words or entity types
    if (first.tag.length <= 2 || second.tag.length <= 2 || !admitted(first, options) || !admitted(second, options)) continue;
    addCoOccurrence(graph, first, second);
    if (!options.respectDirections) addCoOccurrence(graph, second, first);
  }
  return graph;
}

/** Weighted PageRank on the co-occurrence graph as neo4j-nlp runs it (scores start at (1-d)/n and sum to 1). */
export function pageRank(graph: CoOccurrences, options: Pick<TextRankOptions, 'iterations' | 'damp' | 'threshold'>): Map<string, number> {
  const nodes = new Set<string>();
  for (const [source, row] of graph) {
    nodes.add(source);
    for (const destination of row.keys()) nodes.add(destination);
  }
  const n = nodes.size;
  let ranks = new Map([...nodes].map((node) => [node, (1 - options.damp) / n]));
  const outWeight = new Map([...graph].map(([source, row]) => [source, [...row.values()].reduce((sum, entry) => sum + entry.count, 0)]));
  for (let iteration = 0; iteration < options.iterations; iteration += 1) {
    const next = new Map<string, number>();
    for (const node of nodes) next.set(node, (1 - options.damp) / n);
    for (const [source, row] of graph) {
      const share = (ranks.get(source) ?? 0) / (outWeight.get(source) ?? 1);
      for (const [destination, entry] of row) next.set(destination, next.get(destination)! + options.damp * entry.count * share);
    }
    const settled = [...nodes].every((node) => Math.abs(next.get(node)! - ranks.get(node)!) <= options.threshold);
    ranks = next;
    if (settled) break;
  }
  return ranks;
}

/** Tags related to an occurrence, and transitively through later occurrences sharing them (neo4j-nlp's getRelTagsIntoDepth). */
function relatedInDepth(occurrence: Occurrence, later: readonly Occurrence[]): Set<string> {
  const related = new Set(occurrence.related);
  for (const other of later) {
    if (related.has(other.tag) || [...other.related].some((tag) => related.has(tag))) {
      for (const tag of other.related) related.add(tag);
      related.add(other.tag);
    }
  }
  return related;
}

/** Tags that follow this occurrence in the co-occurrence graph and may extend its phrase. */
function nextCandidates(
  occurrence: Occurrence,
  graph: CoOccurrences,
  firstByTag: ReadonlyMap<string, { tag: string; related: Set<string> }>,
  options: TextRankOptions,
): string[] {
  const row = graph.get(occurrence.tag);
  if (row === undefined) return [];
  const candidates: string[] = [];
  for (const [destination, entry] of [...row].sort((a, b) => a[0].localeCompare(b[0]))) {
    if (destination === occurrence.tag || !firstByTag.has(destination)) continue;
    if (!entry.starts.some(([source, target]) => source === occurrence.start && source < target)) continue;
    const candidate = firstByTag.get(destination)!;
    const shared = [...candidate.related].some((tag) => occurrence.related.has(tag));
    if (!options.useDependencies || occurrence.related.has(candidate.tag) || shared) candidates.push(destination);
  }
  return candidates;
}
