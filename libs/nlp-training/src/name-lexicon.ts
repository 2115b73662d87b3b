/** The classes of compromise's lexicon the NER tagger reads, and the coarse class each becomes. */
const CLASSES: Readonly<Record<string, string>> = {
  FemaleName: 'first',
  MaleName: 'first',
  FirstName: 'first',
  LastName: 'last',
  Person: 'person',
  Honorific: 'honorific',
  Actor: 'actor',
  City: 'city',
  Country: 'country',
  Region: 'region',
  Place: 'place',
  Organization: 'org',
  SportsTeam: 'team',
  Demonym: 'demonym',
};

/** The parts of compromise's world model read here (its lexicon: entry → tag or tags; words that end organisation and place names). */
interface CompromiseWorld {
  model: {
    one: { lexicon: Record<string, string | string[]> };
    two: { orgWords: Record<string, unknown>; placeWords: Record<string, unknown> };
  };
}

/**
 * The name lexicon of the NER tagger, built at training time from the lexicon of compromise (MIT; first and last
 * names, people, places, organisations, honorifics, nationalities, and the words that end organisation and place
 * names): lower-cased word → its classes, sorted and comma-joined. A word of a multi-word entry is marked `B-`
 * (first) or `I-` (later). The lexicon is stored in the NER model, so compromise is needed only for training.
 */
export async function compromiseNameLexicon(): Promise<Map<string, string>> {
  const { default: nlp } = (await import('compromise')) as unknown as { default: { world(): CompromiseWorld } };
  const { model } = nlp.world();
  const classes = new NameClasses();
  for (const [entry, tags] of Object.entries(model.one.lexicon)) {
    for (const tag of Array.isArray(tags) ? tags : [tags]) {
      const nameClass = CLASSES[tag];
      if (nameClass !== undefined) classes.addEntry(entry.split(' '), nameClass);
    }
  }
  for (const word of Object.keys(model.two.orgWords)) classes.addWord(word, 'orgword');
  for (const word of Object.keys(model.two.placeWords)) classes.addWord(word, 'placeword');
  return classes.joined();
}

/**
 * A name lexicon in the making: word → its classes. An entry of one word gives it the entry's class; each word of a
 * multi-word entry gets the class marked `B-` (the first word) or `I-` (a later one). Shared by every list the NER
 * tagger reads (compromise's lexicon, the open name lists).
 */
export class NameClasses {
  private readonly classes = new Map<string, Set<string>>();

  /** Adds an entry, given as its words, with its class. */
  addEntry(words: readonly string[], nameClass: string): void {
    if (words.length === 1) this.addWord(words[0]!, nameClass);
    else words.forEach((word, position) => this.addWord(word, `${position === 0 ? 'B' : 'I'}-${nameClass}`));
  }

  /** Gives a word a class. */
  addWord(word: string, nameClass: string): void {
    let set = this.classes.get(word);
    if (set === undefined) this.classes.set(word, (set = new Set<string>()));
    set.add(nameClass);
  }

  /** Word → its classes, sorted and comma-joined. */
  joined(): Map<string, string> {
    return new Map([...this.classes].map(([word, set]) => [word, [...set].sort().join(',')]));
  }
}
