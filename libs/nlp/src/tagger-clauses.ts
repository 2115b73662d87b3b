import { itemAt } from './checked.js';

// The clause state the tagger's features read (features version 2 and 3): which labels are verbs, clause boundaries
// and conjunctions, whether a verb was tagged since the clause began, which words may be verbs and whether a sure verb
// lies ahead, and the repair of a full sentence tagged without any verb.

/**
 * What a label does to the clause state the features read: a verb or auxiliary marks a verb as seen, a clause boundary
 * clears it, and a coordinating conjunction before any verb marks the clause's start as coordinated (features version 3).
 */
export const ClauseRole = {
  None: 0,
  Verb: 1,
  Boundary: 2,
  Conjunction: 3,
  /** A word's (never a label's): its ambiguity class holds a verb or auxiliary label among others ("work": NN, VB, VBP). */
  MayBeVerb: 4,
} as const;

/** Parts of speech that start a new clause for the verb-seen feature: punctuation, conjunctions, wh-words. */
const BOUNDARY_UPOS = new Set(['PUNCT', 'SCONJ']);
const BOUNDARY_XPOS = new Set(['WDT', 'WP', 'WRB']);

const clauseRolesCache = new WeakMap<readonly string[], Int8Array>();

/** The clause role of each joint label `UPOS\tXPOS`, computed once per label list. */
export function clauseRoles(labels: readonly string[]): Int8Array {
  let roles = clauseRolesCache.get(labels);
  if (roles) return roles;
  roles = Int8Array.from(labels, (label) => {
    const [upos = '', xpos = ''] = label.split('\t');
    if (upos === 'VERB' || upos === 'AUX') return ClauseRole.Verb;
    if (upos === 'CCONJ') return ClauseRole.Conjunction;
    return BOUNDARY_UPOS.has(upos) || BOUNDARY_XPOS.has(xpos) ? ClauseRole.Boundary : ClauseRole.None;
  });
  clauseRolesCache.set(labels, roles);
  return roles;
}

/** Verb-seen (and verb-ahead) value of a model trained without those features: extract writes none. */
export const NO_VERB_SEEN = -1;
/** Verb-seen states: none since the clause began, one seen, or none and a conjunction joined words before it. */
const VERB_SEEN = 1;
const NO_VERB_COORDINATED = 2;

/**
 * What a word's ambiguity class (`ambiguityText`: lower-cased word → its labels' indices joined by commas) says of its
 * clause role: the role every label shares ("is", "said": ClauseRole.Verb; ",", "which": Boundary; "and": Conjunction),
 * or ClauseRole.MayBeVerb when some labels are verbs or the word is in `verbal`; words with neither are left out.
 */
export function wordClauseRoles(
  ambiguityText: Iterable<readonly [string, string]>,
  labels: readonly string[],
  verbal: ReadonlySet<string>,
): Map<string, number> {
  const roles = clauseRoles(labels);
  const wordRoles = new Map<string, number>();
  for (const [word, text] of ambiguityText) {
    const classRoles = new Set(text.split(',').map((label) => roles[Number(label)]));
    const [role] = classRoles;
    if (classRoles.size === 1 && role !== undefined && role !== ClauseRole.None) wordRoles.set(word, role);
    else if (classRoles.has(ClauseRole.Verb) || verbal.has(word)) wordRoles.set(word, ClauseRole.MayBeVerb);
  }
  return wordRoles;
}

/**
 * A word is a possible verb for the verb cues when this share of its occurrences, and at least VERBAL_MIN_COUNT, are
 * verbs, although fewer than its ambiguity class needs: with GUM, "lives" is 42 NNS, 1 NNPS and 2 VBZ.
 */
export const VERBAL_MIN_SHARE = 0.02;
export const VERBAL_MIN_COUNT = 2;

/**
 * The verb cues of each of a sentence's lower-cased words (features version 3; all NO_VERB_SEEN before): 2 when a sure verb (see wordClauseRoles)
 * follows it before the next sure clause boundary, plus 1 when the word itself may be a verb. A subject's bare verb
 * has no verb ahead ("Ada and Grace work for Google."), a subject noun usually has ("their work for Google is done").
 */
export function verbCues(lower: readonly string[], wordRoles: ReadonlyMap<string, number>, featuresVersion: number): Int8Array {
  const cues = new Int8Array(lower.length);
  if (featuresVersion < 3) return cues.fill(NO_VERB_SEEN);
  let ahead = 0;
  for (let position = lower.length - 1; position >= 0; position--) {
    const role = wordRoles.get(itemAt(lower, position, 'lower'));
    cues[position] = ahead + (role === ClauseRole.Verb || role === ClauseRole.MayBeVerb ? 1 : 0);
    if (role === ClauseRole.Verb) ahead = 2;
    else if (role === ClauseRole.Boundary || role === ClauseRole.Conjunction) ahead = 0;
  }
  return cues;
}

/**
 * The verb-seen state after a word tagged `label`, from the state before it (NO_VERB_SEEN stays). From features version
 * 3 a conjunction before the clause's verb keeps the clause open as coordinated: "Ada and Grace work" has a plural
 * subject, so its bare "work" is a verb; before, and after a verb, a conjunction starts a new clause.
 */
export function nextVerbSeen(roles: Int8Array, verbSeen: number, label: number, featuresVersion: number): number {
  if (verbSeen === NO_VERB_SEEN) return verbSeen;
  switch (roles[label]) {
    case ClauseRole.Verb:
      return VERB_SEEN;
    case ClauseRole.Conjunction:
      return featuresVersion >= 3 && verbSeen !== VERB_SEEN ? NO_VERB_COORDINATED : 0;
    case ClauseRole.Boundary:
      return 0;
    default:
      return verbSeen;
  }
}

/**
 * 1 when the first pass tagged no verb or auxiliary anywhere in the sentence, else 0; NO_VERB_SEEN before features
 * version 3. A sentence with no verb at all is more often a first pass that took the verb for a noun ("Ada and Grace
 * work for Google.") than a fragment.
 */
export function firstPassVerbless(roles: Int8Array, first: readonly number[], featuresVersion: number): number {
  if (featuresVersion < 3) return NO_VERB_SEEN;
  return first.some((label) => roles[label] === ClauseRole.Verb) ? 0 : 1;
}

/**
 * How far (in second-pass score) a sentence's likeliest verb may trail the tag it got for the verb to be put back in a
 * sentence that ends as a sentence does and was tagged without any verb ("Ada Lovelace and Grace Hopper work for
 * Google.": "work" NN). Chosen on EWT dev, where it changes two words (one right, one wrong).
 */
const VERBLESS_REPAIR_GAP = 40;
/** Words that end a full sentence (as against a heading or a fragment, which often has no verb). */
const SENTENCE_ENDS: ReadonlySet<string> = new Set(['.', '!', '?']);
/**
 * A verb put back must follow a word that can be its subject, and have a word after it before the sentence's end: in
 * EWT dev the repair otherwise took fragments' nouns and adjectives for verbs ("Rooms clean.", "Link?").
 */
const NOMINAL_UPOS: ReadonlySet<string> = new Set(['NOUN', 'PROPN', 'PRON']);

/** The UPOS of a joint label (empty for none). */
function uposOf(labels: readonly string[], label: number | undefined): string {
  const joint = label === undefined ? undefined : labels[label];
  return joint === undefined ? '' : joint.slice(0, joint.indexOf('\t'));
}

/**
 * The repair of a full sentence tagged without any verb (features version 3): while the second pass tags, `consider`
 * keeps the word that may be a verb, has no sure verb ahead, follows a possible subject and is not the sentence's last,
 * whose best verb label trails its tag the least; `apply` makes that word the verb when the tags have none, the
 * sentence ends with . ! or ?, and it trails by at most VERBLESS_REPAIR_GAP.
 */
export class VerblessRepair {
  private position = -1;
  private label = -1;
  private gap = -Infinity;

  constructor(
    private readonly labels: readonly string[],
    private readonly roles: Int8Array,
    private readonly words: readonly string[],
    private readonly cues: Int8Array,
  ) {}

  /** Notes the second pass's `scores` at `position`, where it chose `best` after the tag `previous`. */
  consider(position: number, scores: Float32Array, best: number, previous: number | undefined): void {
    if (this.cues[position] !== 1 || position >= this.words.length - 2 || !NOMINAL_UPOS.has(uposOf(this.labels, previous))) return;
    let label = -1;
    for (let candidate = 0; candidate < scores.length; candidate++)
      if (this.roles[candidate] === ClauseRole.Verb && (label < 0 || scores[candidate]! > scores[label]!)) label = candidate;
    const gap = label < 0 ? -Infinity : scores[label]! - scores[best]!;
    if (gap <= this.gap) return;
    this.position = position;
    this.label = label;
    this.gap = gap;
  }

  /** Puts the verb back into the sentence's tags `out` when they have none (see the class). */
  apply(out: number[]): void {
    if (this.gap < -VERBLESS_REPAIR_GAP || !SENTENCE_ENDS.has(this.words[this.words.length - 1] ?? '')) return;
    if (out.some((label) => this.roles[label] === ClauseRole.Verb)) return;
    out[this.position] = this.label;
  }
}
