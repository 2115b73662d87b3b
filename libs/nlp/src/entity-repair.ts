import { entitySpans } from './entity-spans.js';
import { isPersonTitle } from './person-titles.js';

/** What the repair may read besides the tokens and tags. */
export interface EntityRepairContext {
  /** Each token's joint tagger label (`PROPN\tNNP`); without them no rule that needs a part of speech fires. */
  readonly labels?: readonly string[];
  /**
   * attached[i]: token i follows token i-1 with no space between them (from the raw text's offsets). Without it
   * (tokens given without their text), a hyphen counts as attached on both sides, as the treebank's tokens are.
   */
  readonly attached?: readonly boolean[];
}

/** Hyphens that join the parts of a name ("Zeta-Jones", "al-Janabi", "Jean-Paul"). */
const HYPHENS = new Set(['-', '‐', '‑']);

/** Lower-case particles of Arabic and other names, joined to the next part by a hyphen ("al-Janabi", "bin-Laden"). */
const NAME_PARTICLES = new Set(['al', 'el', 'ul', 'bin', 'ibn', 'abu', 'ben', 'az', 'as', 'ad', 'ash', 'an', 'ar', 'at']);

/** An initial: one capital letter and a full stop ("F.", "W."). */
const INITIAL = /^\p{Lu}\.$/u;

/** Titles that also begin names of places and things ("Prime Rib", "General Motors", "St Pancras", "King Street"). */
const PLACE_OR_THING_TITLES = new Set([
  'prime',
  'vice',
  'general',
  'gen',
  'saint',
  'st',
  'king',
  'queen',
  'prince',
  'princess',
  'lord',
  'lady',
  'pope',
  'father',
  'sister',
  'brother',
  'uncle',
  'aunt',
  'coach',
  'officer',
  'agent',
  'justice',
  'dame',
]);

/** Forms of address UNER leaves out of a person's name ("Mr. [Smith]", "Drs. [Ali]"), lower-case, without a full stop. */
const FORMS_OF_ADDRESS = new Set(['mr', 'mrs', 'ms', 'miss', 'mister', 'dr', 'drs', 'doctor', 'prof', 'professor']);

/** Capitalised words that follow a person's name without being part of it ("Smith Monday", "Lee January"). */
const NOT_SURNAMES = new Set([
  'monday',
  'tuesday',
  'wednesday',
  'thursday',
  'friday',
  'saturday',
  'sunday',
  'january',
  'february',
  'march',
  'april',
  'may',
  'june',
  'july',
  'august',
  'september',
  'october',
  'november',
  'december',
  'i',
]);

/** True when a word starts with a capital letter followed by a lower-case one ("Jones", "McDonald"; not "NASA", "Inc"). */
function titleCase(word: string): boolean {
  return /^\p{Lu}\p{Ll}/u.test(word);
}

/** True when a word starts with a capital letter. */
function capitalised(word: string): boolean {
  return /^\p{Lu}/u.test(word);
}

/**
 * Repairs IOB2 entity tags where the statistical tagger cuts a name short (issue 54):
 * - a hyphen inside a name joins what follows it to the entity before it: "Catherine Zeta-Jones" is tagged
 *   `Catherine Zeta` PER and `Jones` ORG, "Shaikh … al-Janabi" stops at `al`, "Jean-Paul Sartre" is two persons;
 *   across a hyphen the first entity's type wins. Two entities of the same type other than a person stay apart
 *   ("Google-Mozilla", "Iran-Iraq"), as the treebank's annotators keep them;
 * - a person's name of one word, or ending with an initial, takes in a capitalised proper noun right after it that
 *   the tagger left out (a surname: "Traci Warner" tagged `Traci`, "George W. Bush" tagged `George W.`); longer names
 *   stay as they are, as a signature's "John Staikos Direct Dial" shows they must.
 * - capitalised proper nouns the tagger left out after a person's title are a person ("PM Allawi"), the title left out
 *   as UNER marks it; titles that also begin names of places and things ("Prime Rib", "General Motors") do not count.
 * - a person's name the tagger began with a form of address loses it ("Drs. [Ali]"); other titles stay, as UNER keeps
 *   some ("Shaikh Abdul Wahhab al-Janabi").
 * Returns new tags; `tags` is not changed.
 */
export function repairEntityTags(tokens: readonly string[], tags: readonly string[], context: EntityRepairContext = {}): string[] {
  const out = [...tags];
  const { labels, attached } = context;
  const joinedAt = (position: number): boolean => attached === undefined || attached[position] === true;
  let spans = entitySpans(out);
  for (let index = 0; index < spans.length; index++) {
    const span = spans[index]!;
    let end = span.end;
    for (;;) {
      const hyphen = tokens[end];
      const after = tokens[end + 1];
      if (hyphen !== undefined && after !== undefined && HYPHENS.has(hyphen) && joinedAt(end) && joinedAt(end + 1) && capitalised(after)) {
        const afterTag = out[end + 1]!;
        // Without the text, "Luna - Analyst" in a signature looks like "al - Janabi": a word the tagger left out joins
        // only after a name particle, or when the hyphen is known to touch both words.
        const untaggedJoins = attached !== undefined || NAME_PARTICLES.has(tokens[end - 1]!.toLowerCase());
        if ((afterTag === 'O' && untaggedJoins) || (afterTag !== 'O' && span.type === 'PER')) {
          out[end] = `I-${span.type}`;
          out[end + 1] = `I-${span.type}`;
          end += 2;
          // the rest of an entity the word after the hyphen began comes along
          while (end < out.length && out[end]!.startsWith('I-')) out[end++] = `I-${span.type}`;
          continue;
        }
      }
      const next = tokens[end];
      if (
        span.type === 'PER' &&
        (end - span.start === 1 || INITIAL.test(tokens[end - 1]!)) &&
        next !== undefined &&
        out[end] === 'O' &&
        labels !== undefined &&
        labels[end]?.startsWith('PROPN') === true &&
        titleCase(next) &&
        !NOT_SURNAMES.has(next.toLowerCase())
      ) {
        out[end++] = 'I-PER';
        continue;
      }
      break;
    }
    if (end !== span.end) spans = entitySpans(out);
  }
  // a person's name the tagger began with a form of address: "Drs. Ali"; it goes out, as UNER marks it
  for (const span of entitySpans(out)) {
    if (span.type !== 'PER') continue;
    let start = span.start;
    while (span.end - start > 1 && FORMS_OF_ADDRESS.has(tokens[start]!.toLowerCase().replace(/\.$/, '')) && titleCase(tokens[start + 1]!)) out[start++] = 'O';
    if (start !== span.start) out[start] = 'B-PER';
  }
  // a title before capitalised proper nouns the tagger left out: "PM Allawi"; the title stays out, as UNER marks it
  if (labels !== undefined) {
    for (let position = 0; position + 1 < tokens.length; position++) {
      const title = tokens[position]!;
      if (out[position] !== 'O' || !isPersonTitle(title) || PLACE_OR_THING_TITLES.has(title.toLowerCase().replace(/\.$/, ''))) continue;
      let end = position + 1;
      while (end < tokens.length && out[end] === 'O' && labels[end]?.startsWith('PROPN') === true && titleCase(tokens[end]!)) end++;
      if (end === position + 1 || (end < tokens.length && out[end] !== 'O')) continue;
      for (let at = position + 1; at < end; at++) out[at] = at === position + 1 ? 'B-PER' : 'I-PER';
      position = end - 1;
    }
  }
  return out;
}
