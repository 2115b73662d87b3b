// `_entities` and `_merged_entities` derived from an annotation (annotation.ts), so that any
// service answering CoreNLP-shaped JSON can be an entity extraction skill. Pure functions; the
// executor's entity extraction component and the relation components use them.
import { type Annotation, type AnnotationSentence, type AnnotationToken, NO_ENTITY } from './annotation.js';

/** One entity mention of `_merged_entities`; offsets into the document, the end exclusive. */
export interface EntityMention {
  readonly sentenceIndex: number;
  readonly beginCharacter: number;
  readonly endCharacter: number;
  readonly label: string;
  readonly value: string;
}

/** `_entities`: entity type in lower case → the entity texts, each once, in document order. */
export type Entities = Record<string, string[]>;

/** `_merged_entities`: entity label (as the annotation writes it) → its mentions in document order. */
export type MergedEntities = Record<string, EntityMention[]>;

/** A run of consecutive tokens of one sentence with the same entity label. */
interface Run {
  readonly sentenceIndex: number;
  readonly label: string;
  readonly tokens: AnnotationToken[];
}

/**
 * The entity runs of an annotation. A token is part of an entity when its `ner` is present and neither empty nor
 * `O`. With `merge`, consecutive tokens of one sentence with the same `ner` form one run; without, each entity
 * token is a run of its own. Runs never cross sentences.
 */
function entityRuns(annotation: Annotation, merge: boolean): Run[] {
  const runs: Run[] = [];
  for (const sentence of annotation.sentences) {
    let current: Run | undefined;
    for (const token of sentence.tokens) {
      const label = token.ner;
      if (label === undefined || label === '' || label === NO_ENTITY) {
        current = undefined;
        continue;
      }
      if (merge && current !== undefined && current.label === label) {
        current.tokens.push(token);
        continue;
      }
      current = { sentenceIndex: sentenceIndexOf(sentence, annotation), label, tokens: [token] };
      runs.push(current);
    }
  }
  return runs;
}

function sentenceIndexOf(sentence: AnnotationSentence, annotation: Annotation): number {
  return Number.isInteger(sentence.index) ? sentence.index : annotation.sentences.indexOf(sentence);
}

/**
 * The text of a run: each token's `originalText` (its `word` when absent), joined by the `after` of the token
 * before it — the whitespace the document has between them (`Joe O'Neill`, `New York`). A run of one token is
 * that token's text.
 */
function runText(run: Run): string {
  let text = '';
  run.tokens.forEach((token, i) => {
    if (i > 0) text += run.tokens[i - 1]?.after ?? ' ';
    text += token.originalText ?? token.word;
  });
  return text;
}

/**
 * `_entities` of an annotation: for each entity type, lower-cased (`PERSON` → `person`, a dictionary type
 * `TECHNOLOGY` → `technology`), the distinct texts of its entities in the order they first occur. From
 * `/annotate` (`merge` true) consecutive tokens of one type in a sentence are one entity (`Ben Goodger`); from
 * `/v2/annotate` (`merge` false) every token is one (`Ben`, `Goodger`).
 */
export function entitiesOf(annotation: Annotation, merge: boolean): Entities {
  const entities: Entities = {};
  const seen = new Map<string, Set<string>>();
  for (const run of entityRuns(annotation, merge)) {
    const type = run.label.toLowerCase();
    const text = runText(run);
    let known = seen.get(type);
    if (known === undefined) {
      known = new Set();
      seen.set(type, known);
      entities[type] = [];
    }
    if (known.has(text)) continue;
    known.add(text);
    entities[type]?.push(text);
  }
  return entities;
}

/**
 * `_merged_entities` of an annotation, whichever endpoint made it: for each entity label as the annotation writes
 * it, every mention in document order (repeats included), consecutive tokens of one label in a sentence merged into
 * one mention. A mention's `beginCharacter` is its first token's `characterOffsetBegin`, `endCharacter` its last
 * token's `characterOffsetEnd` (exclusive), `sentenceIndex` the sentence's `index`, and `value` its text as in
 * entitiesOf.
 */
export function mergedEntitiesOf(annotation: Annotation): MergedEntities {
  const merged: MergedEntities = {};
  for (const run of entityRuns(annotation, true)) {
    const first = run.tokens[0] as AnnotationToken;
    const last = run.tokens[run.tokens.length - 1] as AnnotationToken;
    const mention: EntityMention = {
      sentenceIndex: run.sentenceIndex,
      beginCharacter: first.characterOffsetBegin,
      endCharacter: last.characterOffsetEnd,
      label: run.label,
      value: runText(run),
    };
    (merged[run.label] ??= []).push(mention);
  }
  return merged;
}

/** True when a value has the outline of an annotation: an object with a `sentences` array whose items have `tokens` arrays. */
export function isAnnotation(value: unknown): value is Annotation {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const { sentences } = value as { sentences?: unknown };
  return (
    Array.isArray(sentences) &&
    sentences.every((sentence) => typeof sentence === 'object' && sentence !== null && Array.isArray((sentence as { tokens?: unknown }).tokens))
  );
}
