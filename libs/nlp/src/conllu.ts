import { CorpusFormatError } from './errors.js';

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

/** Parses a CoNLL-U text; `source` names it in errors. Empty nodes (`8.1`) are skipped (enhanced graph only). */
export function parseConllu(text: string, source = 'conllu'): ConlluSentence[] {
  const sentences: ConlluSentence[] = [];
  const lines = text.split(/\r?\n/);
  let comments = new Map<string, string>();
  let words: ConlluWord[] = [];
  let mwts: ConlluMultiwordToken[] = [];
  let newDoc = false;
  let newPar = false;
  let start = 0;

  const flush = (): void => {
    if (words.length === 0) {
      if (mwts.length > 0) throw new CorpusFormatError(source, start, 'sentence has multi-word tokens but no words');
      return;
    }
    for (const mwt of mwts) {
      if (mwt.last > words.length) throw new CorpusFormatError(source, start, `multi-word token ${mwt.first}-${mwt.last} runs past the last word`);
    }
    for (const word of words) {
      if (word.head > words.length) throw new CorpusFormatError(source, start, `word ${word.id} has head ${word.head} past the last word`);
    }
    sentences.push({
      sentId: comments.get('sent_id'),
      text: comments.get('text'),
      newDoc,
      newPar: newPar || newDoc,
      comments,
      words,
      multiwordTokens: mwts,
      line: start,
    });
    comments = new Map();
    words = [];
    mwts = [];
    newDoc = false;
    newPar = false;
    start = 0;
  };

  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const lineNo = i + 1;
    if (line.trim() === '') {
      flush();
      continue;
    }
    if (start === 0) start = lineNo;
    if (line.startsWith('#')) {
      const body = line.slice(1).trim();
      const eq = body.indexOf('=');
      const key = (eq >= 0 ? body.slice(0, eq) : body).trim();
      const value = eq >= 0 ? body.slice(eq + 1).trim() : '';
      if (key === 'newdoc' || key.startsWith('newdoc ')) newDoc = true;
      if (key === 'newpar' || key.startsWith('newpar ')) newPar = true;
      comments.set(key, value);
      continue;
    }
    const cols = line.split('\t');
    if (cols.length !== COLUMNS) throw new CorpusFormatError(source, lineNo, `expected ${COLUMNS} tab-separated columns, found ${cols.length}`);
    const id = cols[0]!;
    if (id.includes('.')) continue;
    const range = /^(\d+)-(\d+)$/.exec(id);
    if (range) {
      const first = Number(range[1]);
      const last = Number(range[2]);
      if (first !== words.length + 1 || last <= first) throw new CorpusFormatError(source, lineNo, `multi-word token range ${id} out of order`);
      mwts.push({ first, last, form: cols[1]!, misc: cols[9]! });
      continue;
    }
    if (!/^\d+$/.test(id) || Number(id) !== words.length + 1)
      throw new CorpusFormatError(source, lineNo, `word ID ${id} out of order (expected ${words.length + 1})`);
    const headText = cols[6]!;
    if (headText !== '_' && !/^\d+$/.test(headText)) throw new CorpusFormatError(source, lineNo, `HEAD '${headText}' is not a number`);
    words.push({
      id: Number(id),
      form: cols[1]!,
      lemma: cols[2]!,
      upos: cols[3]!,
      xpos: cols[4]!,
      feats: cols[5]!,
      head: headText === '_' ? -1 : Number(headText),
      deprel: cols[7]!,
      deps: cols[8]!,
      misc: cols[9]!,
    });
  }
  flush();
  return sentences;
}

function spaceAfterOf(misc: string): boolean {
  return !misc.split('|').includes('SpaceAfter=No');
}

/** The sentence's surface tokens in order: each multi-word token once, with the words it covers. */
export function surfaceTokens(sentence: ConlluSentence): ConlluSurfaceToken[] {
  const tokens: ConlluSurfaceToken[] = [];
  let m = 0;
  for (let w = 1; w <= sentence.words.length;) {
    const mwt = sentence.multiwordTokens[m];
    if (mwt && mwt.first === w) {
      tokens.push({ form: mwt.form, first: mwt.first, last: mwt.last, spaceAfter: spaceAfterOf(mwt.misc) });
      w = mwt.last + 1;
      m++;
      continue;
    }
    const word = sentence.words[w - 1]!;
    tokens.push({ form: word.form, first: w, last: w, spaceAfter: spaceAfterOf(word.misc) });
    w++;
  }
  return tokens;
}
