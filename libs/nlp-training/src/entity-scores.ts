import { entitySpans } from '@loom/nlp';

/** Exact-span precision, recall and F1 (%) of one entity type, or of all types together (`micro`). */
export interface SpanScore {
  readonly precision: number;
  readonly recall: number;
  readonly f1: number;
}

/** Entity scores per type (PER, ORG, LOC, … in alphabetical order) and `micro` over all of them. */
export type EntityScores = Readonly<Record<string, SpanScore>> & { readonly micro: SpanScore };

interface Counts {
  truePositives: number;
  predicted: number;
  gold: number;
}

function score(counts: Counts): SpanScore {
  const percent = (part: number, whole: number): number => (whole === 0 ? 0 : (100 * part) / whole);
  return {
    precision: percent(counts.truePositives, counts.predicted),
    recall: percent(counts.truePositives, counts.gold),
    f1: percent(2 * counts.truePositives, counts.predicted + counts.gold),
  };
}

/**
 * IOB2 tags of per-word entity types ('O' for none), as an annotation that gives each word a type reads back: a run
 * of words of one type is one span, so adjacent entities of one type become one (the pipeline's NER answer, which
 * `npm run eval -- nlp` scores, has no span boundaries of its own).
 */
export function tagsOfWordTypes(types: readonly string[]): string[] {
  return types.map((type, index) => (type === 'O' ? 'O' : `${types[index - 1] === type ? 'I' : 'B'}-${type}`));
}

/** Exact-span scores of predicted IOB2 tag sequences against gold ones (a span counts when start, end and type all match). */
export function entityScores(sentences: Iterable<{ readonly gold: readonly string[]; readonly predicted: readonly string[] }>): EntityScores {
  const counts = new Map<string, Counts>();
  const countsOf = (type: string): Counts => {
    let entry = counts.get(type);
    if (!entry) counts.set(type, (entry = { truePositives: 0, predicted: 0, gold: 0 }));
    return entry;
  };
  for (const sentence of sentences) {
    const gold = entitySpans(sentence.gold);
    const goldKeys = new Set(gold.map((span) => `${span.start}:${span.end}:${span.type}`));
    for (const span of gold) countsOf(span.type).gold++;
    for (const span of entitySpans(sentence.predicted)) {
      const entry = countsOf(span.type);
      entry.predicted++;
      if (goldKeys.has(`${span.start}:${span.end}:${span.type}`)) entry.truePositives++;
    }
  }
  const all: Counts = { truePositives: 0, predicted: 0, gold: 0 };
  const out: Record<string, SpanScore> = {};
  for (const [type, entry] of [...counts].sort(([left], [right]) => left.localeCompare(right))) {
    out[type] = score(entry);
    all.truePositives += entry.truePositives;
    all.predicted += entry.predicted;
    all.gold += entry.gold;
  }
  return { ...out, micro: score(all) };
}

/** The figures of entity scores as a model card keeps them: `f1Per`, `precisionPer`, `recallPer`, …, and `micro` (the micro F1). */
export function entityCardFigures(scores: EntityScores): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [type, entry] of Object.entries(scores)) {
    const suffix = `${type.slice(0, 1).toUpperCase()}${type.slice(1).toLowerCase()}`;
    out[`precision${suffix}`] = entry.precision;
    out[`recall${suffix}`] = entry.recall;
    out[`f1${suffix}`] = entry.f1;
  }
  out['micro'] = scores.micro.f1;
  return out;
}

/** One line of entity scores: `LOC P 80.00 R 78.00 F1 79.00  ORG …  micro …`. */
export function formatEntityScores(scores: EntityScores): string {
  return Object.entries(scores)
    .map(([type, entry]) => `${type} P ${entry.precision.toFixed(2)} R ${entry.recall.toFixed(2)} F1 ${entry.f1.toFixed(2)}`)
    .join('  ');
}
