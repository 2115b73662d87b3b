import { isWord, NOT_A_CLAUSE_AFTER, tokenize, type Token } from './cypher-text.js';

/**
 * A statement that ends in `CREATE (a)-[:TYPE {key: expression, ...}]->(b)` between two nodes bound earlier in it,
 * taken apart so that the relationships can be written as rows (see trailingRelationshipCreate).
 */
export interface TrailingRelationshipCreate {
  /** The statement before its trailing CREATE clause. */
  readonly head: string;
  /** The relationship type: a plain identifier. */
  readonly type: string;
  /** The variables of the start and end nodes, as the relationship points (`<-` swapped): plain identifiers. */
  readonly from: string;
  readonly to: string;
  /** The property map's entries in order: the key (a plain identifier) and the value's expression as written. */
  readonly properties: readonly { readonly key: string; readonly expression: string }[];
}

const PLAIN_IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;
// clauses whose meaning the rewrite does not follow (DELETE could remove a node the CREATE needs; OPTIONAL MATCH could
// bind one to null); the statement then runs as written
const UNFOLLOWED = new Set(['OPTIONAL', 'DELETE', 'DETACH', 'UNION', 'CALL', 'FOREACH', 'LOAD', 'RETURN']);
const BINDING_CLAUSES = new Set(['MATCH', 'MERGE', 'CREATE']);
// words that end a WITH clause's projection items
const AFTER_ITEMS = new Set(['WHERE', 'ORDER', 'SKIP', 'LIMIT', 'MATCH', 'OPTIONAL', 'MERGE', 'CREATE', 'UNWIND', 'WITH', 'SET', 'REMOVE', 'DELETE', 'DETACH']);
const CLAUSES = new Set([...AFTER_ITEMS, 'RETURN', 'CALL', 'FOREACH', 'UNION', 'LOAD', 'ON']);

/**
 * The statement's trailing CREATE of one relationship between two nodes bound before it, or undefined for any other
 * statement. Accepted only when that is certain from the text: the CREATE is the last clause and its pattern is
 * `(a)-[:T]->(b)` or `(a)<-[:T]-(b)` with an optional unused relationship variable and an optional map literal whose
 * values hold no map literal; `a` and `b` are plain variables bound as nodes by a MATCH, MERGE or CREATE pattern and
 * carried as they are by every WITH since, never bound by `AS`; and the statement has no OPTIONAL MATCH, DELETE, UNION,
 * CALL, FOREACH, LOAD CSV or RETURN. Everything else (new nodes in the CREATE, paths, several relationships, a `$map`
 * of properties) is left to the database.
 */
export function trailingRelationshipCreate(query: string): TrailingRelationshipCreate | undefined {
  const all = tokenize(query);
  let end = all.length;
  while (end > 0 && isPunct(all[end - 1], ';')) end--;
  const tokens = all.slice(0, end);
  const createAt = lastClause(tokens, 'CREATE');
  if (createAt === undefined) return undefined;
  const pattern = relationshipPattern(tokens, createAt + 1, query);
  if (pattern === undefined) return undefined;
  const head = tokens.slice(0, createAt);
  if (head.some((token, index) => isClauseWord(head, index) && UNFOLLOWED.has(token.text.toUpperCase()))) return undefined;
  if (pattern.variable !== undefined && tokens.filter((token) => isName(token) && token.text === pattern.variable).length > 1) return undefined;
  for (const name of [pattern.from, pattern.to]) {
    if (head.some((token, index) => isWord(head[index - 1], 'AS') && token.text === name)) return undefined;
    if (!boundAsNode(head, name)) return undefined;
  }
  const first = tokens[createAt] as Token;
  return { head: query.slice(0, first.start).trimEnd(), type: pattern.type, from: pattern.from, to: pattern.to, properties: pattern.properties };
}

interface RelationshipPattern {
  readonly type: string;
  readonly from: string;
  readonly to: string;
  readonly variable: string | undefined;
  readonly properties: TrailingRelationshipCreate['properties'];
}

/** `(a)-[r:T {…}]->(b)` or `(a)<-[r:T {…}]-(b)` from `at` to the last token exactly, or undefined. */
function relationshipPattern(tokens: readonly Token[], at: number, query: string): RelationshipPattern | undefined {
  const left = nodeVariable(tokens, at);
  if (left === undefined) return undefined;
  let next = at + 3;
  const incoming = isPunct(tokens[next], '<');
  if (incoming) next++;
  if (!isPunct(tokens[next], '-') || !isPunct(tokens[next + 1], '[')) return undefined;
  const open = tokens[next + 1] as Token;
  next += 2;
  let variable: string | undefined;
  if (isName(tokens[next])) variable = (tokens[next++] as Token).text;
  const type = tokens[next + 1];
  if (!isPunct(tokens[next], ':') || type === undefined || !isName(type) || !PLAIN_IDENTIFIER.test(type.text)) return undefined;
  next += 2;
  let properties: RelationshipPattern['properties'] = [];
  if (isPunct(tokens[next], '{')) {
    const close = closing(tokens, next);
    if (close === undefined) return undefined;
    const map = propertyMap(tokens.slice(next + 1, close), query);
    if (map === undefined) return undefined;
    properties = map;
    next = close + 1;
  }
  if (!isPunct(tokens[next], ']') || (tokens[next] as Token).depth !== open.depth) return undefined;
  next++;
  if (!isPunct(tokens[next], '-')) return undefined;
  next++;
  if (!incoming) {
    if (!isPunct(tokens[next], '>')) return undefined;
    next++;
  }
  const right = nodeVariable(tokens, next);
  if (right === undefined || next + 3 !== tokens.length || (variable !== undefined && (variable === left || variable === right))) return undefined;
  return incoming ? { type: type.text, from: right, to: left, variable, properties } : { type: type.text, from: left, to: right, variable, properties };
}

/** The variable of a bare node pattern `(a)` at `at`, a plain identifier, or undefined. */
function nodeVariable(tokens: readonly Token[], at: number): string | undefined {
  const name = tokens[at + 1];
  if (!isPunct(tokens[at], '(') || name === undefined || !isName(name) || !PLAIN_IDENTIFIER.test(name.text) || !isPunct(tokens[at + 2], ')')) return undefined;
  return name.text;
}

/** The entries of a map literal's inside (`key: expression, ...`), or undefined when one is not a plain key with a value free of map literals. */
function propertyMap(inside: readonly Token[], query: string): RelationshipPattern['properties'] | undefined {
  if (inside.length === 0) return [];
  const depth = (inside[0] as Token).depth;
  const entries: Token[][] = [[]];
  for (const token of inside) {
    if (token.depth === depth && isPunct(token, ',')) entries.push([]);
    else (entries[entries.length - 1] as Token[]).push(token);
  }
  const properties: { key: string; expression: string }[] = [];
  for (const entry of entries) {
    const [key, colon, ...value] = entry;
    // a map literal inside a value is built by AGE's CREATE without its null entries, which the rewrite would keep
    if (key === undefined || !isName(key) || !PLAIN_IDENTIFIER.test(key.text) || !isPunct(colon, ':') || value.length === 0) return undefined;
    if (value.some((token) => isPunct(token, '{') || isPunct(token, '}')) || properties.some((property) => property.key === key.text)) return undefined;
    properties.push({ key: key.text, expression: query.slice((value[0] as Token).start, (value[value.length - 1] as Token).end) });
  }
  return properties;
}

/**
 * Whether `name` is a node bound in the scope at the end of `tokens`: by a pattern of a MATCH, MERGE or CREATE clause
 * after the last WITH, or carried by that WITH as a bare item (or `*`) from a scope in which it was.
 */
function boundAsNode(tokens: readonly Token[], name: string): boolean {
  const withAt = lastClause(tokens, 'WITH');
  let clause = '';
  for (let index = withAt ?? 0; index < tokens.length; index++) {
    const token = tokens[index] as Token;
    if (isClauseWord(tokens, index)) clause = isWord(tokens[index - 1], 'ON') ? 'ON' : token.text.toUpperCase();
    const variable = tokens[index + 1];
    const after = tokens[index + 2];
    const binds = token.depth === 0 && isPunct(token, '(') && BINDING_CLAUSES.has(clause) && variable?.text === name && isName(variable);
    if (binds && (isPunct(after, ')') || isPunct(after, ':') || isPunct(after, '{'))) return true;
  }
  if (withAt === undefined || !carried(tokens, withAt, name)) return false;
  return boundAsNode(tokens.slice(0, withAt), name);
}

/** Whether the WITH clause at `withAt` projects `name` as it is (`WITH a, b`) or everything (`WITH *`). */
function carried(tokens: readonly Token[], withAt: number, name: string): boolean {
  let index = withAt + 1;
  if (isWord(tokens[index], 'DISTINCT')) index++;
  const items: Token[][] = [[]];
  for (; index < tokens.length; index++) {
    const token = tokens[index] as Token;
    if (token.depth === 0 && token.kind === 'word' && AFTER_ITEMS.has(token.text.toUpperCase())) break;
    if (token.depth === 0 && isPunct(token, ',')) items.push([]);
    else (items[items.length - 1] as Token[]).push(token);
  }
  return items.some((item, at) => item.length === 1 && ((isName(item[0]) && item[0]?.text === name) || (at === 0 && isPunct(item[0], '*'))));
}

/** The index of the last top-level clause `word`, or undefined. */
function lastClause(tokens: readonly Token[], word: string): number | undefined {
  for (let index = tokens.length - 1; index >= 0; index--) if (isWord(tokens[index], word) && isClauseWord(tokens, index)) return index;
  return undefined;
}

/** Whether the token at `index` is a clause keyword at the top level (not a property key, label, map key or alias). */
function isClauseWord(tokens: readonly Token[], index: number): boolean {
  const token = tokens[index] as Token;
  if (token.kind !== 'word' || token.depth !== 0 || !CLAUSES.has(token.text.toUpperCase())) return false;
  const previous = tokens[index - 1];
  if (previous !== undefined && ((previous.kind === 'punct' && NOT_A_CLAUSE_AFTER.has(previous.text)) || isWord(previous, 'AS'))) return false;
  // `STARTS WITH` and `ENDS WITH` are string operators
  if (isWord(token, 'WITH') && (isWord(previous, 'STARTS') || isWord(previous, 'ENDS'))) return false;
  return !isPunct(tokens[index + 1], ':');
}

/** The index of the bracket that closes the one at `open`, or undefined. */
function closing(tokens: readonly Token[], open: number): number | undefined {
  const depth = (tokens[open] as Token).depth;
  for (let index = open + 1; index < tokens.length; index++) {
    const token = tokens[index] as Token;
    if (token.kind === 'punct' && token.depth === depth && (token.text === '}' || token.text === ']' || token.text === ')')) return index;
  }
  return undefined;
}

function isName(token: Token | undefined): boolean {
  return token?.kind === 'word' || token?.kind === 'ident';
}

function isPunct(token: Token | undefined, text: string): boolean {
  return token?.kind === 'punct' && token.text === text;
}
