import { itemAt, CorpusFormatError } from '@loom/nlp';

/** One syntactic word of a CoNLL-U sentence (an integer ID line). */
export interface ConlluWord {
  /** 1-based position within the sentence. */
  readonly id: number;
  readonly form: string;
  readonly lemma: string;
  readonly upos: string;
  readonly xpos: string;
  readonly feats: string;
  /** 0 for the root; -1 when the file leaves it unspecified (`_`). */
  readonly head: number;
  readonly deprel: string;
  readonly deps: string;
  readonly misc: string;
}

/** A multi-word token (`2-3 don't`): its surface form spans words first..last. */
export interface ConlluMultiwordToken {
  readonly first: number;
  readonly last: number;
  readonly form: string;
  readonly misc: string;
}

/** One sentence of a CoNLL-U file. */
export interface ConlluSentence {
  readonly sentId: string | undefined;
  readonly text: string | undefined;
  /** True when a `# newdoc` comment precedes the sentence. */
  readonly newDoc: boolean;
  /** True when a `# newpar` (or `# newdoc`) comment precedes the sentence. */
  readonly newPar: boolean;
  /** Every comment line's `key = value` (or the bare comment under its own text). */
  readonly comments: ReadonlyMap<string, string>;
  readonly words: readonly ConlluWord[];
  readonly multiwordTokens: readonly ConlluMultiwordToken[];
  /** Line of the sentence's first line in the source (1-based). */
  readonly line: number;
}

/** A surface token: a multi-word token or a word not inside one, in text order. */
export interface ConlluSurfaceToken {
  readonly form: string;
  readonly first: number;
  readonly last: number;
  /** False when MISC says `SpaceAfter=No`. */
  readonly spaceAfter: boolean;
}

const COLUMNS = 10;

/** The ten columns of a word line: ID, FORM, LEMMA, UPOS, XPOS, FEATS, HEAD, DEPREL, DEPS, MISC. */
type Columns = readonly [string, string, string, string, string, string, string, string, string, string];

function isColumns(columns: readonly string[]): columns is Columns {
  return columns.length === COLUMNS;
}

/** The sentence being read: what its lines gave so far. */
interface SentenceInProgress {
  comments: Map<string, string>;
  words: ConlluWord[];
  multiwordTokens: ConlluMultiwordToken[];
  newDoc: boolean;
  newPar: boolean;
  /** Line of its first line, 0 before one was read. */
  line: number;
}

function emptySentence(): SentenceInProgress {
  return { comments: new Map(), words: [], multiwordTokens: [], newDoc: false, newPar: false, line: 0 };
}

/** The sentence read, checked; undefined when it has no words yet (its comments then carry over to the next). */
function finishSentence(sentence: SentenceInProgress, source: string): ConlluSentence | undefined {
  const { comments, words, multiwordTokens, newDoc, newPar, line } = sentence;
  if (words.length === 0) {
    if (multiwordTokens.length > 0) throw new CorpusFormatError(source, line, 'sentence has multi-word tokens but no words');
    return undefined;
  }
  for (const token of multiwordTokens) {
    if (token.last > words.length) throw new CorpusFormatError(source, line, `multi-word token ${token.first}-${token.last} runs past the last word`);
  }
  for (const word of words) {
    if (word.head > words.length) throw new CorpusFormatError(source, line, `word ${word.id} has head ${word.head} past the last word`);
  }
  return {
    sentId: comments.get('sent_id'),
    text: comments.get('text'),
    newDoc,
    newPar: newPar || newDoc,
    comments,
    words,
    multiwordTokens,
    line,
  };
}

/** Reads a comment line (`# key = value`) into the sentence. */
function readComment(line: string, sentence: SentenceInProgress): void {
  const body = line.slice(1).trim();
  const equals = body.indexOf('=');
  const key = (equals >= 0 ? body.slice(0, equals) : body).trim();
  const value = equals >= 0 ? body.slice(equals + 1).trim() : '';
  if (key === 'newdoc' || key.startsWith('newdoc ')) sentence.newDoc = true;
  if (key === 'newpar' || key.startsWith('newpar ')) sentence.newPar = true;
  sentence.comments.set(key, value);
}

/** Reads a word, multi-word token or (skipped) empty node line into the sentence. */
function readTokenLine(line: string, lineNumber: number, sentence: SentenceInProgress, source: string): void {
  const columns = line.split('\t');
  if (!isColumns(columns)) throw new CorpusFormatError(source, lineNumber, `expected ${COLUMNS} tab-separated columns, found ${columns.length}`);
  const [id, form, lemma, upos, xpos, feats, headText, deprel, deps, misc] = columns;
  if (id.includes('.')) return;
  const { words } = sentence;
  const range = /^(\d+)-(\d+)$/.exec(id);
  if (range) {
    const first = Number(range[1]);
    const last = Number(range[2]);
    if (first !== words.length + 1 || last <= first) throw new CorpusFormatError(source, lineNumber, `multi-word token range ${id} out of order`);
    sentence.multiwordTokens.push({ first, last, form, misc });
    return;
  }
  if (!/^\d+$/.test(id) || Number(id) !== words.length + 1)
    throw new CorpusFormatError(source, lineNumber, `word ID ${id} out of order (expected ${words.length + 1})`);
  if (headText !== '_' && !/^\d+$/.test(headText)) throw new CorpusFormatError(source, lineNumber, `HEAD '${headText}' is not a number`);
  words.push({ id: Number(id), form, lemma, upos, xpos, feats, head: headText === '_' ? -1 : Number(headText), deprel, deps, misc });
}

/** Parses a CoNLL-U text; `source` names it in errors. Empty nodes (`8.1`) are skipped (enhanced graph only). */
export function parseConllu(text: string, source = 'conllu'): ConlluSentence[] {
  const sentences: ConlluSentence[] = [];
  let sentence = emptySentence();
  for (const [index, line] of text.split(/\r?\n/).entries()) {
    const lineNumber = index + 1;
    if (line.trim() === '') {
      const finished = finishSentence(sentence, source);
      if (finished) {
        sentences.push(finished);
        sentence = emptySentence();
      }
      continue;
    }
    if (sentence.line === 0) sentence.line = lineNumber;
    if (line.startsWith('#')) readComment(line, sentence);
    else readTokenLine(line, lineNumber, sentence, source);
  }
  const last = finishSentence(sentence, source);
  if (last) sentences.push(last);
  return sentences;
}

function spaceAfterOf(misc: string): boolean {
  return !misc.split('|').includes('SpaceAfter=No');
}

/** The sentence's surface tokens in order: each multi-word token once, with the words it covers. */
export function surfaceTokens(sentence: ConlluSentence): ConlluSurfaceToken[] {
  const tokens: ConlluSurfaceToken[] = [];
  let nextMultiword = 0;
  for (let position = 1; position <= sentence.words.length;) {
    const multiword = sentence.multiwordTokens[nextMultiword];
    if (multiword && multiword.first === position) {
      tokens.push({ form: multiword.form, first: multiword.first, last: multiword.last, spaceAfter: spaceAfterOf(multiword.misc) });
      position = multiword.last + 1;
      nextMultiword++;
      continue;
    }
    const word = itemAt(sentence.words, position - 1, 'sentence words');
    tokens.push({ form: word.form, first: position, last: position, spaceAfter: spaceAfterOf(word.misc) });
    position++;
  }
  return tokens;
}
