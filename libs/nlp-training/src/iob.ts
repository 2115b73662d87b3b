import { itemAt, CorpusFormatError } from '@loom/nlp';

/** One sentence of a token-per-line NER file, tags normalised to IOB2 (`B-X`, `I-X`, `O`). */
export interface IobSentence {
  readonly sentId: string | undefined;
  readonly text: string | undefined;
  readonly tokens: readonly string[];
  readonly tags: readonly string[];
  /** Line of the sentence's first line in the source (1-based). */
  readonly line: number;
}

/** How the file marks entity starts: IOB2 (every entity starts with B-) or IOB1 (B- only between two same-type entities). */
export type IobScheme = 'iob2' | 'iob1';

export interface ParseIobOptions {
  /** Names the text in errors. */
  readonly source?: string;
  readonly scheme?: IobScheme;
}

const TAG = /^(?:O|[BI]-.+)$/;

/**
 * Parses a token-per-line NER file: UNER's `id<TAB>token<TAB>tag…` with `# sent_id` / `# text`
 * comments, or `token<TAB|space>tag` (CoNLL, BTC, WikiGold). Blank lines end sentences. An `I-`
 * that cannot continue the previous tag starts a new entity, as IOB2 evaluation treats it.
 */
export function parseIob(text: string, options: ParseIobOptions = {}): IobSentence[] {
  const source = options.source ?? 'iob';
  const scheme = options.scheme ?? 'iob2';
  const sentences: IobSentence[] = [];
  let sentId: string | undefined;
  let sentText: string | undefined;
  let tokens: string[] = [];
  let tags: string[] = [];
  let start = 0;
  const flush = (): void => {
    if (tokens.length > 0) sentences.push({ sentId, text: sentText, tokens, tags: normaliseTags(tags), line: start });
    sentId = undefined;
    sentText = undefined;
    tokens = [];
    tags = [];
    start = 0;
  };
  const lines = text.split(/\r?\n/);
  for (let index = 0; index < lines.length; index++) {
    const line = itemAt(lines, index, 'lines');
    if (line.trim() === '') {
      flush();
      continue;
    }
    if (start === 0) start = index + 1;
    if (line.startsWith('# ') || (line.startsWith('#') && tokens.length === 0 && line.includes(' = '))) {
      const match = /^#\s*(sent_id|text)\s*=\s*(.*)$/.exec(line);
      if (match) {
        if (match[1] === 'sent_id') sentId = itemAt(match, 2, 'match').trim();
        else sentText = match[2];
      }
      continue;
    }
    const cols = line.includes('\t') ? line.split('\t') : line.trim().split(/\s+/);
    let token: string;
    let tag: string;
    if (cols.length >= 3 && /^\d+$/.test(itemAt(cols, 0, 'cols'))) {
      token = itemAt(cols, 1, 'cols');
      tag = itemAt(cols, 2, 'cols').trim();
    } else if (cols.length >= 2) {
      token = itemAt(cols, 0, 'cols');
      tag = itemAt(cols, cols.length - 1, 'cols').trim();
    } else {
      throw new CorpusFormatError(source, index + 1, 'expected a token and a tag');
    }
    if (!TAG.test(tag)) throw new CorpusFormatError(source, index + 1, `tag '${tag}' is not O, B-TYPE or I-TYPE`);
    tokens.push(token);
    tags.push(scheme === 'iob1' ? iob1Tag(tag, tags[tags.length - 1]) : tag);
  }
  flush();
  return sentences;
}

function iob1Tag(tag: string, previous: string | undefined): string {
  if (tag === 'O' || tag.startsWith('B-')) return tag;
  const type = tag.slice(2);
  return previous !== undefined && previous !== 'O' && previous.slice(2) === type ? `I-${type}` : `B-${type}`;
}

/** Repairs `I-X` after `O` or after another type into `B-X`, so every tag sequence is valid IOB2. */
export function normaliseTags(tags: readonly string[]): string[] {
  const out: string[] = [];
  for (let position = 0; position < tags.length; position++) {
    const tag = itemAt(tags, position, 'tags');
    const previous = out[position - 1];
    if (tag.startsWith('I-') && (previous === undefined || previous === 'O' || previous.slice(2) !== tag.slice(2))) out.push(`B-${tag.slice(2)}`);
    else out.push(tag);
  }
  return out;
}
