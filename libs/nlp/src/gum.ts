import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseConllu, type ConlluSentence } from './conllu.js';

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

/** Every sentence of the GUM documents under the data directory, with relations named as in EWT (see GUM_RELATIONS). */
export function readGumTreebank(dataDir: string): { sentences: ConlluSentence[]; files: string[] } {
  const files = gumFiles(dataDir);
  const sentences = files.flatMap((file) =>
    readGumFile(dataDir, file).map((sentence) => ({
      ...sentence,
      words: sentence.words.map((word) => {
        const deprel = GUM_RELATIONS[word.deprel];
        return deprel === undefined ? word : { ...word, deprel };
      }),
    })),
  );
  return { sentences, files };
}
