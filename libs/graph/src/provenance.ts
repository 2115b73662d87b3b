import { isWord, NOT_A_CLAUSE_AFTER, type Token, tokenize } from './cypher-text.js';

/** The prefix of the lineage properties a graph writer with `provenance` sets on every node it writes. */
export const PROVENANCE_PREFIX = 'loom_';

/** The lineage properties, each also the name of the statement parameter that carries its value. */
export const PROVENANCE_PROPERTIES = ['loom_message_id', 'loom_source', 'loom_workflow', 'loom_workflow_version', 'loom_written_at'] as const;
export type ProvenanceProperty = (typeof PROVENANCE_PROPERTIES)[number];

/** The statement cannot say which nodes it writes, so provenance cannot be set on them; `problem` says why. */
export class ProvenanceRewriteError extends Error {
  override readonly name = 'ProvenanceRewriteError';
}

// clause keywords that end the pattern (and ON CREATE / ON MATCH items) of a MERGE or CREATE
const CLAUSES = new Set([
  'MATCH',
  'OPTIONAL',
  'MERGE',
  'CREATE',
  'WITH',
  'RETURN',
  'UNWIND',
  'SET',
  'DELETE',
  'DETACH',
  'REMOVE',
  'FOREACH',
  'CALL',
  'UNION',
  'ON',
  'WHERE',
  'ORDER',
  'SKIP',
  'LIMIT',
]);

/**
 * The statement with a `SET` after each top-level MERGE or CREATE clause that sets the lineage properties on the nodes
 * that clause introduces (`SET n.loom_message_id = $loom_message_id, ...`), so each written node carries them. A
 * node without a variable is given one (`loom_node_1`). A node the statement bound before (by MATCH) is not marked:
 * it is read, not written. A MERGE or CREATE inside FOREACH, CALL { } or a subquery, or a statement with UNION, is
 * refused (a ProvenanceRewriteError saying so): the nodes it writes are out of reach of a following SET.
 */
export function withProvenance(query: string): string {
  const tokens = tokenize(query);
  const bound = new Set<string>();
  const insertions: { at: number; text: string }[] = [];
  let named = 0;
  for (let index = 0; index < tokens.length; index++) {
    const token = tokens[index] as Token;
    const previous = tokens[index - 1];
    const isClause = previous === undefined || previous.kind !== 'punct' || !NOT_A_CLAUSE_AFTER.has(previous.text);
    if (isClause && isWord(token, 'UNION')) throw new ProvenanceRewriteError('a statement with UNION cannot be given provenance: write one statement a part');
    const writes = isClause && (isWord(token, 'MERGE') || (isWord(token, 'CREATE') && !isSchemaCreate(tokens[index + 1])));
    if (!writes) {
      if (token.kind === 'word' || token.kind === 'ident') bound.add(token.text);
      continue;
    }
    if (token.depth > 0) {
      throw new ProvenanceRewriteError(
        `the ${token.text.toUpperCase()} at character ${token.start + 1} is inside FOREACH, CALL { } or a subquery: provenance marks only nodes written at the top level`,
      );
    }
    // the clause's patterns: up to the next clause keyword at the top level
    let end = index + 1;
    const written: string[] = [];
    for (; end < tokens.length; end++) {
      const at = tokens[end] as Token;
      const before = tokens[end - 1] as Token;
      if (at.depth === 0 && at.kind === 'word' && CLAUSES.has(at.text.toUpperCase()) && !(before.kind === 'punct' && NOT_A_CLAUSE_AFTER.has(before.text)))
        break;
      // a node pattern: '(' at the top level of the pattern (depth 0), its variable (if any) right after
      if (at.kind !== 'punct' || at.text !== '(' || at.depth !== 0) continue;
      const name = tokens[end + 1];
      if ((name?.kind === 'word' || name?.kind === 'ident') && !isWord(name, 'NOT')) {
        if (!bound.has(name.text) && !written.includes(name.text)) written.push(name.text);
      } else {
        const variable = `loom_node_${++named}`;
        insertions.push({ at: at.end, text: variable });
        written.push(variable);
      }
    }
    // ON CREATE SET / ON MATCH SET items belong to the MERGE: the lineage SET goes after them
    while (end < tokens.length && isWord(tokens[end], 'ON')) {
      end += 3; // ON CREATE|MATCH SET
      while (end < tokens.length) {
        const at = tokens[end] as Token;
        const before = tokens[end - 1] as Token;
        if (at.depth === 0 && at.kind === 'word' && CLAUSES.has(at.text.toUpperCase()) && !(before.kind === 'punct' && NOT_A_CLAUSE_AFTER.has(before.text)))
          break;
        end++;
      }
    }
    for (const variable of written) bound.add(variable);
    if (written.length > 0) {
      const position = end < tokens.length ? (tokens[end] as Token).start : query.length;
      insertions.push({ at: position, text: `${end < tokens.length ? '' : ' '}${provenanceSet(written)}${end < tokens.length ? ' ' : ''}` });
    }
    index = end - 1;
  }
  let text = '';
  let at = 0;
  for (const insertion of insertions.sort((a, b) => a.at - b.at)) {
    text += query.slice(at, insertion.at) + insertion.text;
    at = insertion.at;
  }
  return text + query.slice(at);
}

/** `CREATE INDEX`, `CREATE CONSTRAINT`, ... write no node. */
function isSchemaCreate(next: Token | undefined): boolean {
  return next?.kind === 'word' && /^(INDEX|CONSTRAINT|DATABASE|USER|ROLE|OR|ALIAS|TEXT|RANGE|POINT|LOOKUP|FULLTEXT|VECTOR)$/i.test(next.text);
}

function provenanceSet(variables: readonly string[]): string {
  const quoted = (variable: string): string => (/^[A-Za-z_]\w*$/.test(variable) ? variable : `\`${variable.replaceAll('`', '``')}\``);
  return `SET ${variables.flatMap((variable) => PROVENANCE_PROPERTIES.map((property) => `${quoted(variable)}.${property} = $${property}`)).join(', ')}`;
}
