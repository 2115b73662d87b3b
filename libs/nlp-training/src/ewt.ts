import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseConllu, type ConlluSentence } from './conllu.js';

/** File names of the EWT splits under the data directory. */
export const EWT_TRAIN = join('ud-english-ewt', 'en_ewt-ud-train.conllu');
export const EWT_DEV = join('ud-english-ewt', 'en_ewt-ud-dev.conllu');

/** Reads one EWT split. */
export function readEwt(dataDir: string, file: string): ConlluSentence[] {
  return parseConllu(readFileSync(join(dataDir, file), 'utf8'), file);
}

/** Joint tagger label of a word: `UPOS\tXPOS`. */
export function jointTag(upos: string, xpos: string): string {
  return `${upos}\t${xpos}`;
}

/** An index that numbers strings in the order they are first seen. */
export class Vocabulary {
  readonly items: string[] = [];
  private readonly index = new Map<string, number>();

  constructor(items: readonly string[] = []) {
    for (const item of items) this.add(item);
  }

  add(item: string): number {
    let code = this.index.get(item);
    if (code === undefined) {
      code = this.items.length;
      this.items.push(item);
      this.index.set(item, code);
    }
    return code;
  }

  get(item: string): number | undefined {
    return this.index.get(item);
  }
}
