// The fixed paths a rule stands for, and the word lists it names: shared by push validation (which bounds both) and
// the executor's compiler (which turns each fixed path into one branch of the rule's statement). The shapes here are
// structural so that relation-rules.ts, which defines the rule language, can use them without an import cycle.

/** A step as written: one or more relations, a direction, and how often it may be taken. */
export interface StepShape<Token = unknown> {
  readonly relation: string | readonly string[];
  readonly direction: 'up' | 'down';
  readonly token?: Token;
  readonly optional?: boolean;
  readonly repeat?: { readonly min?: number; readonly max: number };
}

/** One hop of a fixed path: relations of one kind (one relationship type), the step it comes from and its token constraint. */
export interface RuleHop<Token = unknown> {
  /** The relationship type in the token graph (the upper-cased base relation: `NSUBJ` for `nsubj:pass`). */
  readonly type: string;
  /** The relations of the step with this base, as written (`nsubj`, `nsubj:pass`). */
  readonly relations: readonly string[];
  readonly direction: 'up' | 'down';
  readonly token?: Token;
  /** Index of the step in the rule's path. */
  readonly step: number;
}

/** The fewest and most hops a step takes. */
export function stepBounds(step: StepShape): { min: number; max: number } {
  const max = step.repeat?.max ?? 1;
  const min = step.optional === true ? 0 : (step.repeat?.min ?? 1);
  return { min: Math.min(min, max), max };
}

/** The step's relations grouped by relationship type (their upper-cased base), in the order written. */
export function relationsByType(relation: string | readonly string[]): Map<string, string[]> {
  const byType = new Map<string, string[]>();
  for (const item of typeof relation === 'string' ? [relation] : relation) {
    const type = item.split(':')[0]!.toUpperCase();
    byType.set(type, [...(byType.get(type) ?? []), item]);
  }
  return byType;
}

/** How many fixed paths a path stands for, and the most hops of one: what push validation bounds. */
export function rulePathsSize(path: readonly StepShape[]): { paths: number; hops: number } {
  let paths = 1;
  let hops = 0;
  for (const step of path) {
    const { min, max } = stepBounds(step);
    const kinds = relationsByType(step.relation).size;
    let choices = 0;
    for (let n = min; n <= max; n++) choices += kinds ** n;
    paths *= choices;
    hops += max;
  }
  return { paths, hops };
}

/**
 * The fixed paths a rule's path stands for: every optional and repeated step spelled out, and a step over relations
 * of different kinds split by kind. A path of no hops at all (every step skipped) is left out.
 */
export function expandRulePaths<Token>(path: readonly StepShape<Token>[]): RuleHop<Token>[][] {
  let partial: RuleHop<Token>[][] = [[]];
  path.forEach((step, index) => {
    const { min, max } = stepBounds(step);
    const hops: RuleHop<Token>[] = [...relationsByType(step.relation)].map(([type, relations]) => ({
      type,
      relations,
      direction: step.direction,
      ...(step.token === undefined ? {} : { token: step.token }),
      step: index,
    }));
    const runs: RuleHop<Token>[][] = [];
    let current: RuleHop<Token>[][] = [[]];
    for (let n = 0; n <= max; n++) {
      if (n >= min) runs.push(...current);
      current = current.flatMap((run) => hops.map((hop) => [...run, hop]));
    }
    partial = partial.flatMap((prefix) => runs.map((run) => [...prefix, ...run]));
  });
  return partial.filter((hops) => hops.length > 0);
}

/** A word list reference as written among lemmas. */
export interface ListReference {
  readonly list: string;
}

/** Words as written in a rule: plain words and references to the rule set's named lists. */
export type WordsShape = readonly (string | ListReference)[];

/** The words of a rule's word field, the named lists spelled out, lower-cased and without repeats. */
export function resolveWords(words: WordsShape, lists: Readonly<Record<string, readonly string[]>> | undefined): string[] {
  const resolved = new Set<string>();
  for (const item of words) {
    const group = typeof item === 'string' ? [item] : (lists?.[item.list] ?? []);
    for (const word of group) resolved.add(word.toLowerCase());
  }
  return [...resolved];
}

const WORD_FIELDS = ['lemma', 'notLemma'] as const;

/** Every `{"list": name}` in a rule set's rules, with the JSON path of the object that holds it. */
export function listReferences(rules: readonly unknown[]): { path: (string | number)[]; name: string }[] {
  const found: { path: (string | number)[]; name: string }[] = [];
  const visit = (value: unknown, path: (string | number)[], depth: number): void => {
    if (typeof value !== 'object' || value === null || depth > 8) return;
    if (Array.isArray(value)) {
      value.forEach((item, index) => visit(item, [...path, index], depth + 1));
      return;
    }
    for (const [key, item] of Object.entries(value)) {
      if ((WORD_FIELDS as readonly string[]).includes(key) && Array.isArray(item)) {
        item.forEach((entry: unknown, index) => {
          if (typeof entry === 'object' && entry !== null && typeof (entry as { list?: unknown }).list === 'string') {
            found.push({ path: [...path, key, index], name: (entry as ListReference).list });
          }
        });
      } else if (key !== 'examples') {
        visit(item, [...path, key], depth + 1);
      }
    }
  };
  rules.forEach((rule, index) => visit(rule, ['rules', index], 0));
  return found;
}
