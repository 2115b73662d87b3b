import { describe, expect, it } from 'vitest';
import { ClauseRole, clauseRoles, NO_VERB_SEEN, nextVerbSeen, VerblessRepair, verbCues, wordClauseRoles } from './tagger-clauses.js';

const LABELS = ['PROPN\tNNP', 'CCONJ\tCC', 'NOUN\tNN', 'VERB\tVBP', 'ADP\tIN', 'PUNCT\t.', 'AUX\tVBZ', 'PRON\tWP'];
const [PROPN, CC, NN, VBP, IN, PUNCT, VBZ, WP] = LABELS.map((_, index) => index) as [number, number, number, number, number, number, number, number];
const ROLES = clauseRoles(LABELS);
// lower-cased word -> indices of its ambiguity class, as a tagger file keeps them
const CLASSES: [string, string][] = [
  ['and', `${CC}`],
  ['work', `${NN},${VBP}`],
  ['is', `${VBZ}`],
  ['.', `${PUNCT}`],
  ['for', `${IN}`],
  ['lives', `${NN}`],
];
const WORD_ROLES = wordClauseRoles(CLASSES, LABELS, new Set(['lives']));

describe('the clause state of the tagger', () => {
  it('gives labels and words their clause roles', () => {
    expect([...ROLES]).toEqual([
      ClauseRole.None,
      ClauseRole.Conjunction,
      ClauseRole.None,
      ClauseRole.Verb,
      ClauseRole.None,
      ClauseRole.Boundary,
      ClauseRole.Verb,
      ClauseRole.Boundary,
    ]);
    // "lives" has no verb in its class but is verbal enough to be a possible verb; "for" has no role
    expect(Object.fromEntries(WORD_ROLES)).toEqual({
      and: ClauseRole.Conjunction,
      work: ClauseRole.MayBeVerb,
      is: ClauseRole.Verb,
      '.': ClauseRole.Boundary,
      lives: ClauseRole.MayBeVerb,
    });
  });

  it('keeps a clause opened by a conjunction before its verb coordinated from features version 3 only', () => {
    const after = (version: number, labels: number[]): number => labels.reduce((state, label) => nextVerbSeen(ROLES, state, label, version), 0);
    expect(after(3, [PROPN, CC, PROPN])).toBe(2);
    expect(after(2, [PROPN, CC, PROPN])).toBe(0);
    expect(after(3, [PROPN, VBP, CC, PROPN])).toBe(0);
    expect(after(3, [PROPN, CC, PROPN, VBP])).toBe(1);
    expect(after(3, [PROPN, CC, PROPN, WP])).toBe(0);
    expect([PROPN, VBP].reduce((state, label) => nextVerbSeen(ROLES, state, label, 1), NO_VERB_SEEN)).toBe(NO_VERB_SEEN);
  });

  it('cues a possible verb (1) and a sure verb ahead before the next boundary (2)', () => {
    expect([...verbCues(['ada', 'and', 'grace', 'work', 'for', 'acme', '.'], WORD_ROLES, 3)]).toEqual([0, 0, 0, 1, 0, 0, 0]);
    expect([...verbCues(['their', 'work', 'for', 'acme', 'is', 'done', '.'], WORD_ROLES, 3)]).toEqual([2, 3, 2, 2, 1, 0, 0]);
    expect([...verbCues(['work', 'is', '.'], WORD_ROLES, 2)]).toEqual([NO_VERB_SEEN, NO_VERB_SEEN, NO_VERB_SEEN]);
  });
});

describe('the repair of a sentence tagged without a verb', () => {
  const words = ['Ada', 'and', 'Grace', 'work', 'for', 'Acme', '.'];
  const cues = verbCues(
    words.map((word) => word.toLowerCase()),
    WORD_ROLES,
    3,
  );
  /** Second-pass scores with `best` on top and the verb label `gap` under it. */
  const scores = (best: number, gap: number): Float32Array => {
    const out = new Float32Array(LABELS.length);
    out[best] = 50;
    out[VBP] = 50 - gap;
    return out;
  };
  const tagged = (): number[] => [PROPN, CC, PROPN, NN, IN, PROPN, PUNCT];

  it("makes the likeliest possible verb after a subject the sentence's verb", () => {
    const repair = new VerblessRepair(LABELS, ROLES, words, cues);
    repair.consider(3, scores(NN, 30), NN, PROPN);
    const out = tagged();
    repair.apply(out);
    expect(out).toEqual([PROPN, CC, PROPN, VBP, IN, PROPN, PUNCT]);
  });

  it('leaves a fragment, a verb far behind, a word after no subject and a sentence that has a verb as they are', () => {
    const cases: [string, (repair: VerblessRepair) => void, string[]?][] = [
      ['far behind', (repair) => repair.consider(3, scores(NN, 45), NN, PROPN)],
      ['after a conjunction', (repair) => repair.consider(3, scores(NN, 10), NN, CC)],
      ['no end', (repair) => repair.consider(3, scores(NN, 10), NN, PROPN), ['Ada', 'and', 'Grace', 'work', 'for', 'Acme', 'today']],
    ];
    for (const [name, consider, sentence] of cases) {
      const repair = new VerblessRepair(LABELS, ROLES, sentence ?? words, cues);
      consider(repair);
      const out = tagged();
      repair.apply(out);
      expect(out, name).toEqual(tagged());
    }
    const repair = new VerblessRepair(LABELS, ROLES, words, cues);
    repair.consider(3, scores(NN, 10), NN, PROPN);
    const withVerb = [PROPN, CC, PROPN, NN, VBZ, PROPN, PUNCT];
    repair.apply(withVerb);
    expect(withVerb).toEqual([PROPN, CC, PROPN, NN, VBZ, PROPN, PUNCT]);
  });
});
