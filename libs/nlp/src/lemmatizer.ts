/**
 * Lemmas as EWT has them: a lookup of (lower-cased form, XPOS) → lemma learned from the treebank,
 * then suffix rules learned from it (per XPOS, the longest known suffix's most frequent
 * "cut n characters, append s" edit) for unseen words. Proper nouns keep their form.
 */
export interface LemmatizerModel {
  /** `lower\txpos` → lemma. */
  readonly lexicon: ReadonlyMap<string, string>;
  /** `xpos\tsuffix` → [cut, append]. */
  readonly rules: ReadonlyMap<string, readonly [number, string]>;
}

const MAX_SUFFIX = 5;
const MIN_RULE_COUNT = 2;

/** Lemma of a word with its XPOS tag. */
export function lemmatize(model: LemmatizerModel, form: string, xpos: string): string {
  const lower = form.toLowerCase();
  const known = model.lexicon.get(`${lower}\t${xpos}`);
  if (known !== undefined) return known;
  if (xpos === 'NNP' || xpos === 'NNPS') return form;
  for (let suffixLength = Math.min(MAX_SUFFIX, lower.length); suffixLength >= 0; suffixLength--) {
    const rule = model.rules.get(`${xpos}\t${lower.slice(lower.length - suffixLength)}`);
    if (rule && rule[0] < lower.length) return lower.slice(0, lower.length - rule[0]) + rule[1];
  }
  return lower;
}

function edit(lower: string, lemma: string): [number, string] {
  let common = 0;
  while (common < lower.length && common < lemma.length && lower[common] === lemma[common]) common++;
  return [lower.length - common, lemma.slice(common)];
}

/** Learns the lookup and the suffix rules from (form, XPOS, lemma) triples. */
export function trainLemmatizer(words: Iterable<{ form: string; xpos: string; lemma: string }>): LemmatizerModel {
  const counts = new Map<string, Map<string, number>>();
  const ruleCounts = new Map<string, Map<string, number>>();
  const bump = (table: Map<string, Map<string, number>>, key: string, value: string): void => {
    let inner = table.get(key);
    if (!inner) table.set(key, (inner = new Map<string, number>()));
    inner.set(value, (inner.get(value) ?? 0) + 1);
  };
  for (const word of words) {
    if (word.lemma === '_' || word.xpos === '_') continue;
    const lower = word.form.toLowerCase();
    bump(counts, `${lower}\t${word.xpos}`, word.lemma);
    if (word.xpos === 'NNP' || word.xpos === 'NNPS') continue;
    const [cut, append] = edit(lower, word.lemma);
    for (let suffixLength = 0; suffixLength <= Math.min(MAX_SUFFIX, lower.length); suffixLength++)
      bump(ruleCounts, `${word.xpos}\t${lower.slice(lower.length - suffixLength)}`, `${cut}\t${append}`);
  }
  const top = (table: Map<string, number>): [string, number] => [...table].reduce((leader, entry) => (entry[1] > leader[1] ? entry : leader));
  const lexicon = new Map<string, string>();
  for (const [key, lemmas] of counts) lexicon.set(key, top(lemmas)[0]);
  const rules = new Map<string, readonly [number, string]>();
  for (const [key, edits] of ruleCounts) {
    const [best, n] = top(edits);
    if (n < MIN_RULE_COUNT) continue;
    const tab = best.indexOf('\t');
    rules.set(key, [Number(best.slice(0, tab)), best.slice(tab + 1)]);
  }
  return { lexicon, rules };
}

/** Lines of a lemmatizer model (lexicon entries, then rules). */
export function encodeLemmatizer(model: LemmatizerModel): { lexicon: string[]; rules: string[] } {
  return {
    lexicon: [...model.lexicon].map(([suffixLength, v]) => `${suffixLength}\t${v}`),
    rules: [...model.rules].map(([suffixLength, [cut, append]]) => `${suffixLength}\t${cut}\t${append}`),
  };
}

/** Rebuilds a lemmatizer from encodeLemmatizer's lines. */
export function decodeLemmatizer(lexiconLines: readonly string[], ruleLines: readonly string[]): LemmatizerModel {
  // The key is the line's first two fields as they stand, sliced once (no split and re-join per entry).
  const lexicon = new Map<string, string>();
  for (const line of lexiconLines) {
    const tab = line.lastIndexOf('\t');
    lexicon.set(line.slice(0, tab), line.slice(tab + 1));
  }
  const rules = new Map<string, readonly [number, string]>();
  for (const line of ruleLines) {
    const second = line.indexOf('\t', line.indexOf('\t') + 1);
    const third = line.indexOf('\t', second + 1);
    rules.set(line.slice(0, second), [Number(line.slice(second + 1, third)), line.slice(third + 1)]);
  }
  return { lexicon, rules };
}
