import { isWord, tokenize, type Token } from './cypher-text.js';

/** One property of a batch node MERGE and the field of the row whose value it takes. */
export interface RowProperty {
  readonly property: string;
  readonly field: string;
}

/**
 * A statement `UNWIND $rows AS row MERGE (n:Label {key: row.field, ...}) SET n.p = row.q, ...`, taken apart so that its
 * rows can be written as rows of the label table (see batchNodeMerge).
 */
export interface BatchNodeMerge {
  /** The parameter holding the rows, without `$`. */
  readonly parameter: string;
  readonly label: string;
  /** The MERGE's property map in order: the node's key. */
  readonly key: readonly RowProperty[];
  /** The SET items in order (a property set twice: the later one wins), none a key property. */
  readonly sets: readonly RowProperty[];
}

/** What the rows of a BatchNodeMerge come to: per distinct key, in the order first seen, the node's key and what the SETs leave. */
export interface FoldedNodeMerge {
  /** The key properties of each distinct node, as a map. */
  readonly keys: readonly Readonly<Record<string, KeyValue>>[];
  /** The properties the SETs give each node (the last row's value of each), its null ones left out. */
  readonly sets: readonly Readonly<Record<string, unknown>>[];
  /** The properties the SETs remove from each node (the last row's value was null or missing). */
  readonly removed: readonly (readonly string[])[];
}

export type KeyValue = string | number | boolean;

const PLAIN_IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/**
 * The statement taken apart when it is exactly `UNWIND $p AS row MERGE (n:Label {k: row.f, ...})` followed by nothing
 * or by SET clauses whose items are all `n.prop = row.field` on properties outside the key (a trailing `;` allowed),
 * every name a plain identifier; undefined for any other statement (a RETURN, ON CREATE, another clause, an
 * expression), which then runs as written.
 */
export function batchNodeMerge(query: string): BatchNodeMerge | undefined {
  const tokens = tokenize(query);
  while (tokens.length > 0 && isPunct(tokens[tokens.length - 1], ';')) tokens.pop();
  const [unwind, parameter, as, row, merge] = tokens;
  if (!isWord(unwind, 'UNWIND') || parameter?.kind !== 'param' || !isWord(as, 'AS') || !isPlain(row) || !isWord(merge, 'MERGE')) return undefined;
  const name = parameter.text.slice(1);
  if (!PLAIN_IDENTIFIER.test(name)) return undefined;
  const rowName = (row as Token).text;
  // (n:Label {k: row.f, ...})
  const [open, variable, colon, label, brace] = tokens.slice(5, 10);
  if (!isPunct(open, '(') || !isPlain(variable) || !isPunct(colon, ':') || !isPlain(label) || !isPunct(brace, '{')) return undefined;
  const node = (variable as Token).text;
  if (node === rowName) return undefined;
  const key: RowProperty[] = [];
  let at = 10;
  for (;;) {
    const entry = rowValue(tokens, at, rowName, ':');
    if (entry === undefined) return undefined;
    key.push(entry);
    at += 5;
    if (isPunct(tokens[at], ',')) at++;
    else break;
  }
  if (!isPunct(tokens[at], '}') || !isPunct(tokens[at + 1], ')')) return undefined;
  at += 2;
  const sets: RowProperty[] = [];
  while (at < tokens.length) {
    if (!isWord(tokens[at], 'SET')) return undefined;
    at++;
    for (;;) {
      // n.prop = row.field
      if (tokens[at]?.text !== node || !isPlain(tokens[at]) || !isPunct(tokens[at + 1], '.')) return undefined;
      const item = rowValue(tokens, at + 2, rowName, '=');
      if (item === undefined) return undefined;
      sets.push(item);
      at += 7;
      if (isPunct(tokens[at], ',')) at++;
      else break;
    }
  }
  const keyProperties = new Set(key.map((entry) => entry.property));
  if (keyProperties.size !== key.length || sets.some((entry) => keyProperties.has(entry.property))) return undefined;
  return { parameter: name, label: (label as Token).text, key, sets };
}

/**
 * The rows folded as the statement would leave the graph: per distinct key (in the order first seen) its key map and
 * what its rows' SETs come to, each property the last row's value. Undefined when a row is not an object or a key value
 * is not a string, a finite number or a boolean (a null key, a list or a map: the statement runs as written, for AGE
 * to match it its own way).
 */
export function foldNodeMergeRows(merge: BatchNodeMerge, rows: unknown): FoldedNodeMerge | undefined {
  if (!Array.isArray(rows)) return undefined;
  const nodes = new Map<string, { key: Record<string, KeyValue>; values: Map<string, unknown> }>();
  for (const row of rows as unknown[]) {
    if (typeof row !== 'object' || row === null || Array.isArray(row)) return undefined;
    const fields = row as Record<string, unknown>;
    const key: Record<string, KeyValue> = {};
    for (const { property, field } of merge.key) {
      const value = Object.hasOwn(fields, field) ? fields[field] : undefined;
      if (!(typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value)))) return undefined;
      key[property] = value;
    }
    // JSON text keeps a string and a number of the same digits apart, as the graph does
    const identity = JSON.stringify(merge.key.map(({ property }) => key[property]));
    let node = nodes.get(identity);
    if (node === undefined) {
      node = { key, values: new Map() };
      nodes.set(identity, node);
    }
    for (const { property, field } of merge.sets) {
      const value = Object.hasOwn(fields, field) ? fields[field] : undefined;
      node.values.delete(property); // the last SET of a property decides, wherever it stands
      node.values.set(property, value ?? null);
    }
  }
  const folded = [...nodes.values()];
  return {
    keys: folded.map((node) => node.key),
    sets: folded.map((node) => Object.fromEntries([...node.values].filter(([, value]) => value !== null))),
    removed: folded.map((node) => [...node.values].filter(([, value]) => value === null).map(([property]) => property)),
  };
}

/** `name: row.field` (a key entry) or `name = row.field` (a SET item, after `n.`) at `at`: 5 tokens. */
function rowValue(tokens: readonly Token[], at: number, row: string, separator: ':' | '='): RowProperty | undefined {
  const [property, between, rowToken, dot, field] = tokens.slice(at, at + 5);
  if (!isPlain(property) || !isPunct(between, separator) || !isPlain(rowToken) || rowToken?.text !== row || !isPunct(dot, '.') || !isPlain(field)) {
    return undefined;
  }
  return { property: (property as Token).text, field: (field as Token).text };
}

function isPlain(token: Token | undefined): boolean {
  return (token?.kind === 'word' || token?.kind === 'ident') && PLAIN_IDENTIFIER.test(token.text);
}

function isPunct(token: Token | undefined, text: string): boolean {
  return token?.kind === 'punct' && token.text === text;
}
