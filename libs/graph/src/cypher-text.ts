import type { GraphNodeKey } from './graph-store.js';

/** One lexical token of a Cypher text; strings and comments are consumed and never become words. */
export interface Token {
  readonly kind: 'word' | 'ident' | 'param' | 'string' | 'number' | 'punct';
  /** The word as written, a backtick identifier without its quotes, or the punctuation character. */
  readonly text: string;
  /** Nesting depth in (), [] and {} where the token starts. */
  readonly depth: number;
  readonly start: number;
  readonly end: number;
}

const WRITING_CLAUSES = new Set(['CREATE', 'MERGE', 'SET', 'DELETE', 'DETACH', 'REMOVE', 'DROP', 'INSERT', 'ALTER', 'GRANT', 'DENY', 'REVOKE', 'RENAME']);
// a keyword right after these is a property key, label or relationship type, not a clause ('|' is not among them:
// in FOREACH (x IN list | SET ...) a clause follows it, and refusing a type named like a clause is the safe mistake)
export const NOT_A_CLAUSE_AFTER = new Set(['.', ':', '&', '!']);
const RETURN_ITEMS_END = new Set(['ORDER', 'SKIP', 'LIMIT', 'OFFSET', 'UNION']);

/**
 * The first writing clause of a Cypher text (`CREATE`, `MERGE`, `SET`, `DELETE`, `DETACH`, `REMOVE`, `DROP`,
 * `LOAD CSV`, `CALL <procedure>`...) outside string literals and comments, or undefined for a read-only text. A
 * procedure call counts as writing because a procedure may write; a `CALL { ... }` subquery is judged by its body.
 */
export function findWritingClause(query: string): string | undefined {
  const tokens = tokenize(query);
  for (let index = 0; index < tokens.length; index++) {
    const token = tokens[index]!;
    if (token.kind !== 'word') continue;
    const previous = tokens[index - 1];
    const next = tokens[index + 1];
    if (previous !== undefined && ((previous.kind === 'punct' && NOT_A_CLAUSE_AFTER.has(previous.text)) || isWord(previous, 'AS'))) continue;
    if (next?.kind === 'punct' && next.text === ':') continue; // a map key: {set: 1}
    const word = token.text.toUpperCase();
    if (WRITING_CLAUSES.has(word)) return word;
    if (word === 'LOAD' && next !== undefined && isWord(next, 'CSV')) return 'LOAD CSV';
    if (word === 'CALL' && next !== undefined && (next.kind === 'word' || next.kind === 'ident')) return `CALL ${procedureName(tokens, index + 1)}`;
  }
  return undefined;
}

/** Return columns derived from a Cypher text, or the RETURN item that has no simple name. */
export type DerivedColumns = { readonly ok: true; readonly columns: string[] } | { readonly ok: false; readonly problem: string };

/**
 * The column names of the last top-level RETURN clause, when every item is simple: `expr AS alias`, a bare
 * identifier, or a property path `a.b`. A text without RETURN has no columns.
 */
export function deriveReturnColumns(query: string): DerivedColumns {
  const tokens = tokenize(query);
  let returnAt = -1;
  tokens.forEach((token, index) => {
    if (token.depth === 0 && isWord(token, 'RETURN') && !(index > 0 && tokens[index - 1]!.kind === 'punct' && NOT_A_CLAUSE_AFTER.has(tokens[index - 1]!.text)))
      returnAt = index;
  });
  if (returnAt === -1) return { ok: true, columns: [] };

  let index = returnAt + 1;
  if (tokens[index] !== undefined && isWord(tokens[index], 'DISTINCT')) index++;
  const items: Token[][] = [[]];
  for (; index < tokens.length; index++) {
    const token = tokens[index]!;
    if (token.depth === 0 && ((token.kind === 'word' && RETURN_ITEMS_END.has(token.text.toUpperCase())) || (token.kind === 'punct' && token.text === ';')))
      break;
    if (token.depth === 0 && token.kind === 'punct' && token.text === ',') items.push([]);
    else items[items.length - 1]!.push(token);
  }

  const columns: string[] = [];
  for (const item of items) {
    const text = item.length === 0 ? '' : query.slice(item[0]!.start, item[item.length - 1]!.end);
    const name = columnName(item);
    if (name === undefined) {
      const why = text === '*' ? 'RETURN * does not name its columns' : `the RETURN item '${text}' has no simple name (add AS <name>)`;
      return { ok: false, problem: why };
    }
    if (columns.includes(name)) return { ok: false, problem: `the RETURN clause names the column '${name}' twice` };
    columns.push(name);
  }
  return { ok: true, columns };
}

/**
 * The statement that writes a batch: `UNWIND $<batch> AS <row>` followed by the query with each parameter `$name` read
 * as `<row>.name` (outside strings and comments), so one query serves a message and a batch of them. A query that
 * already starts with `UNWIND $<batch>` is taken as written for batches and returned unchanged.
 */
export function toBatchQuery(query: string, batch: string, row: string): string {
  const tokens = tokenize(query);
  if (isWord(tokens[0], 'UNWIND') && tokens[1]?.kind === 'param' && tokens[1].text === `$${batch}`) return query;
  let text = '';
  let at = 0;
  for (const token of tokens) {
    if (token.kind !== 'param') continue;
    const name = token.text.slice(1);
    const quoted = name.startsWith('`') ? name : /^[A-Za-z_]\w*$/.test(name) ? name : `\`${name}\``;
    text += `${query.slice(at, token.start)}${row}.${quoted}`;
    at = token.end;
  }
  return `UNWIND $${batch} AS ${row} ${text}${query.slice(at)}`;
}

/**
 * The message fields a statement reads, so that only those are sent as its parameters: the names of its `$name`
 * parameters; given `batch`, for a statement that writes batches (`UNWIND $<parameter> AS <row>` first) the
 * `<row>.name` fields it reads. Undefined when it may read a whole row (`<row>` not followed by `.name`): then every field is needed.
 */
export function fieldsRead(query: string, batch?: { readonly parameter: string; readonly row: string }): ReadonlySet<string> | undefined {
  const tokens = tokenize(query);
  const fields = new Set<string>();
  const row = batch?.row;
  const writtenForBatches =
    batch !== undefined &&
    isWord(tokens[0], 'UNWIND') &&
    tokens[1]?.kind === 'param' &&
    tokens[1].text === `$${batch.parameter}` &&
    isWord(tokens[2], 'AS') &&
    tokens[3]?.text === row;
  if (!writtenForBatches) {
    for (const token of tokens) if (token.kind === 'param') fields.add(token.text.slice(1).replace(/`/g, ''));
    return fields;
  }
  for (let index = 4; index < tokens.length; index++) {
    const token = tokens[index] as Token;
    if ((token.kind !== 'word' && token.kind !== 'ident') || token.text !== row) continue;
    const dot = tokens[index + 1];
    const field = tokens[index + 2];
    if (dot?.kind === 'punct' && dot.text === '.' && (field?.kind === 'word' || field?.kind === 'ident')) fields.add(field.text);
    else if (!carriedByWith(tokens, index)) return undefined;
  }
  return fields;
}

/**
 * The node keys a statement's MERGE clauses look nodes up by, so that they can be indexed: for each
 * `MERGE (n:Label {a: ..., b: ...})` (the pattern's first node, with one label and a property map, outside strings and
 * comments), the label and the map's keys in order; each key once. Labels and keys that are not plain identifiers are
 * left out (ensurePropertyIndexes takes only those).
 */
export function mergeKeys(query: string): GraphNodeKey[] {
  const tokens = tokenize(query);
  const keys = new Map<string, GraphNodeKey>();
  tokens.forEach((token, index) => {
    const previous = tokens[index - 1];
    if (!isWord(token, 'MERGE') || (previous?.kind === 'punct' && NOT_A_CLAUSE_AFTER.has(previous.text))) return;
    const key = mergedNodeKey(tokens, index + 1);
    if (key !== undefined) keys.set(`${key.label}(${key.properties.join(',')})`, key);
  });
  return [...keys.values()];
}

const PLAIN_IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** The key of the node pattern `(n:Label {a: ..., b: ...})` starting at `from`, or undefined for any other pattern. */
function mergedNodeKey(tokens: readonly Token[], from: number): GraphNodeKey | undefined {
  const isName = (token: Token | undefined): boolean => token?.kind === 'word' || token?.kind === 'ident';
  const isPunct = (token: Token | undefined, text: string): boolean => token?.kind === 'punct' && token.text === text;
  let at = from;
  if (!isPunct(tokens[at], '(')) return undefined;
  if (isName(tokens[++at])) at++; // the variable
  const label = tokens[at + 1];
  if (!isPunct(tokens[at], ':') || label === undefined || !isName(label) || !isPunct(tokens[at + 2], '{')) return undefined;
  const open = tokens[at + 2] as Token;
  const properties: string[] = [];
  for (at += 3; at < tokens.length && !(isPunct(tokens[at], '}') && tokens[at]!.depth === open.depth); at++) {
    const token = tokens[at]!;
    const startsEntry = isPunct(tokens[at - 1], '{') || isPunct(tokens[at - 1], ',');
    if (token.depth === open.depth + 1 && startsEntry && isName(token) && isPunct(tokens[at + 1], ':')) properties.push(token.text);
  }
  if (properties.length === 0 || ![label.text, ...properties].every((name) => PLAIN_IDENTIFIER.test(name))) return undefined;
  return { label: label.text, properties: [...new Set(properties)] };
}

/** True when the token at `index` is an item of a WITH projection as it is (`WITH d, row UNWIND ...`), not renamed. */
function carriedByWith(tokens: readonly Token[], index: number): boolean {
  const before = tokens[index - 1];
  const after = tokens[index + 1];
  if (isWord(after, 'AS') || (after?.kind === 'punct' && after.text !== ',')) return false;
  if (!(before?.kind === 'punct' && before.text === ',') && !isWord(before, 'WITH') && !isWord(before, 'DISTINCT')) return false;
  for (let at = index - 1; at >= 0; at--) {
    const token = tokens[at] as Token;
    if (token.depth !== (tokens[index] as Token).depth || token.kind !== 'word') continue;
    if (isWord(token, 'WITH')) return true;
    if (!isWord(token, 'DISTINCT') && /^[A-Z]+$/.test(token.text) && token.text.length > 2) return false;
  }
  return false;
}

function columnName(item: readonly Token[]): string | undefined {
  const last = item[item.length - 1];
  const beforeLast = item[item.length - 2];
  if (item.length >= 3 && beforeLast !== undefined && isWord(beforeLast, 'AS') && last !== undefined && (last.kind === 'word' || last.kind === 'ident')) {
    return last.text;
  }
  if (item.length === 1 && last !== undefined && (last.kind === 'word' || last.kind === 'ident')) return last.text;
  // a property path a.b.c, named as written (which is also what Neo4j calls the column)
  const isPath =
    item.length >= 3 &&
    item.length % 2 === 1 &&
    item.every((token, at) => (at % 2 === 0 ? token.kind === 'word' : token.kind === 'punct' && token.text === '.'));
  return isPath ? item.map((token) => token.text).join('') : undefined;
}

function procedureName(tokens: readonly Token[], from: number): string {
  const parts: string[] = [];
  for (let index = from; index < tokens.length; index++) {
    const token = tokens[index]!;
    if (token.kind === 'word' || token.kind === 'ident' || (token.kind === 'punct' && token.text === '.')) parts.push(token.text);
    else break;
  }
  return parts.join('');
}

/** True when the token is the (case-insensitive) keyword `word`. */
export function isWord(token: Token | undefined, word: string): boolean {
  return token?.kind === 'word' && token.text.toUpperCase() === word;
}

/** Splits Cypher into tokens, skipping whitespace, comments and the inside of string literals. */
export function tokenize(query: string): Token[] {
  const tokens: Token[] = [];
  let depth = 0;
  let index = 0;
  const push = (kind: Token['kind'], text: string, start: number, end: number): void => {
    tokens.push({ kind, text, depth, start, end });
  };
  while (index < query.length) {
    const char = query[index]!;
    const start = index;
    if (/\s/.test(char)) {
      index++;
    } else if (char === '/' && query[index + 1] === '/') {
      const newline = query.indexOf('\n', index);
      index = newline === -1 ? query.length : newline + 1;
    } else if (char === '/' && query[index + 1] === '*') {
      const close = query.indexOf('*/', index + 2);
      index = close === -1 ? query.length : close + 2;
    } else if (char === "'" || char === '"') {
      index = skipQuoted(query, index, char);
      push('string', query.slice(start, index), start, index);
    } else if (char === '`') {
      // a doubled backtick is an escaped backtick inside the identifier
      let text = '';
      index++;
      while (index < query.length) {
        if (query[index] === '`' && query[index + 1] === '`') {
          text += '`';
          index += 2;
        } else if (query[index] === '`') {
          index++;
          break;
        } else {
          text += query[index++];
        }
      }
      push('ident', text, start, index);
    } else if (char === '$') {
      index++;
      while (index < query.length && /[\w`]/.test(query[index]!)) index++;
      push('param', query.slice(start, index), start, index);
    } else if (/[A-Za-z_]/.test(char)) {
      while (index < query.length && /\w/.test(query[index]!)) index++;
      push('word', query.slice(start, index), start, index);
    } else if (/\d/.test(char)) {
      while (index < query.length && /[\w.]/.test(query[index]!)) index++;
      push('number', query.slice(start, index), start, index);
    } else {
      index++;
      if (char === ')' || char === ']' || char === '}') depth = Math.max(0, depth - 1);
      push('punct', char, start, index);
      if (char === '(' || char === '[' || char === '{') depth++;
    }
  }
  return tokens;
}

function skipQuoted(query: string, from: number, quote: string): number {
  let index = from + 1;
  while (index < query.length) {
    const char = query[index]!;
    if (char === '\\') index += 2;
    else if (char === quote) return index + 1;
    else index++;
  }
  return query.length;
}
