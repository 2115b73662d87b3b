import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseConllu, type ConlluSentence, type ConlluWord } from './conllu.js';

/** Folder of GUM's openly licensed documents (UD CoNLL-U, one file a document) under the data directory. */
export const GUM_DIR = join('ner', 'gum');

/** What a model trained on GUM's documents credits (the texts' licences: the folder's LICENSE-UD-GUM.txt). */
export const GUM_ATTRIBUTION =
  'Also trained on the Georgetown University Multilayer corpus (UD_English-GUM, commit afb41ee), its openly licensed genres only: academic, bio, conversation, court, interview, news, speech, textbook, vlog, voyage; Zeldes 2017, "The GUM Corpus: Creating Multilayer Resources in the Classroom", Language Resources and Evaluation 51(3); annotations CC BY 4.0, texts under Creative Commons attribution licences or public domain, as each source says.';

/**
 * GUM relations named as the EWT release loom trains on names them: UD English merged the temporal and bare
 * noun-phrase modifiers into `:unmarked`, which this GUM commit still splits.
 */
const GUM_RELATIONS: Readonly<Record<string, string>> = {
  'nmod:npmod': 'nmod:unmarked',
  'obl:npmod': 'obl:unmarked',
  'obl:tmod': 'obl:unmarked',
};

/** The GUM documents under the data directory, as paths relative to it, in name order. */
export function gumFiles(dataDir: string): string[] {
  return readdirSync(join(dataDir, GUM_DIR))
    .filter((name) => name.endsWith('.conllu'))
    .sort()
    .map((name) => join(GUM_DIR, name));
}

/** Reads one GUM document (a path relative to the data directory). */
export function readGumFile(dataDir: string, file: string): ConlluSentence[] {
  return parseConllu(readFileSync(join(dataDir, file), 'utf8'), file);
}

/** Relations of a title's left dependents that belong to the whole name in EWT (see titlesAsEwt). */
const NAME_FUNCTION_WORDS: ReadonlySet<string> = new Set(['case', 'det', 'cc', 'mark', 'punct']);

/** Relations that give a title a determiner or possessor: EWT makes a name after such a title its apposition. */
const TITLE_DETERMINERS: ReadonlySet<string> = new Set(['det', 'nmod:poss', 'det:poss']);

/**
 * A title before a name as EWT annotates it. GUM makes the title the head and the name its `flat` dependent
 * ("Mathematician Hermann Weyl said": Hermann and Weyl flat under Mathematician), or for some its `appos` ("television
 * presenter Sally Meen"); EWT makes the name the head and the title its `nmod:desc` ("Acme chairman Jane Doe": chairman
 * nmod:desc under Jane, Doe flat under Jane) when the title has no determiner or possessor (56 of EWT train's 64; with
 * one, 44 of 46 are appositions, "their top reporter Ahmed Mansour", which stay as they are). Here the
 * name's first word takes the title's head and relation, the title becomes its `nmod:desc`, the name's other words
 * hang `flat` from its first, and the title's dependents right of the name, and the function words left of it (case,
 * determiner, conjunction, punctuation: "by the", as EWT's names have them), move to the name; its modifiers
 * (adjectives, compounds, possessors: "Berlin music critic") stay on the title.
 */
export function titlesAsEwt(words: readonly ConlluWord[]): ConlluWord[] {
  const heads = words.map((word) => word.head);
  const relations = words.map((word) => word.deprel);
  for (const title of words) {
    const first = words[title.id];
    if (title.upos !== 'NOUN' || first?.upos !== 'PROPN' || heads[first.id - 1] !== title.id) continue;
    const relation = relations[first.id - 1];
    const bare = () => !words.some((word, index) => heads[index] === title.id && TITLE_DETERMINERS.has(relations[index]!));
    if (relation !== 'flat' && !(relation === 'appos' && bare())) continue;
    let last = first.id;
    while (words[last]?.upos === 'PROPN' && relations[last] === 'flat' && (heads[last] === title.id || heads[last] === first.id)) last++;
    heads[first.id - 1] = heads[title.id - 1]!;
    relations[first.id - 1] = relations[title.id - 1]!;
    heads[title.id - 1] = first.id;
    relations[title.id - 1] = 'nmod:desc';
    for (let index = 0; index < words.length; index++) {
      if (index + 1 === first.id || heads[index] !== title.id) continue;
      if (index + 1 > first.id && index + 1 <= last) relations[index] = 'flat';
      if (index + 1 > title.id || NAME_FUNCTION_WORDS.has(relations[index]!)) heads[index] = first.id;
    }
  }
  return words.map((word, index) =>
    word.head === heads[index] && word.deprel === relations[index] ? word : { ...word, head: heads[index]!, deprel: relations[index]! },
  );
}

/**
 * Every sentence of the GUM documents under the data directory in EWT's conventions: relations named as in EWT (see
 * GUM_RELATIONS) and titles before names attached as EWT attaches them (see titlesAsEwt).
 */
export function readGumTreebank(dataDir: string): { sentences: ConlluSentence[]; files: string[] } {
  const files = gumFiles(dataDir);
  const sentences = files.flatMap((file) =>
    readGumFile(dataDir, file).map((sentence) => ({
      ...sentence,
      words: titlesAsEwt(
        sentence.words.map((word) => {
          const deprel = GUM_RELATIONS[word.deprel];
          return deprel === undefined ? word : { ...word, deprel };
        }),
      ),
    })),
  );
  return { sentences, files };
}
