import { describe, expect, it } from 'vitest';
import { deriveReturnColumns, fieldsRead, findWritingClause, mergeKeys, toBatchQuery } from './cypher-text.js';

describe('findWritingClause', () => {
  it.each([
    ['CREATE (n:Person)', 'CREATE'],
    ['match (n) set n.x = 1', 'SET'],
    ['MATCH (n) DETACH DELETE n', 'DETACH'],
    ['MATCH (n) DELETE n', 'DELETE'],
    ['MATCH (n) REMOVE n:Old', 'REMOVE'],
    ['MERGE (n:Tag {v: 1})', 'MERGE'],
    ['DROP INDEX person_name', 'DROP'],
    ["LOAD CSV FROM 'file:///x.csv' AS row RETURN row", 'LOAD CSV'],
    ["CALL apoc.create.node(['X'], {}) YIELD node RETURN node", 'CALL apoc.create.node'],
    ['MATCH (n) CALL { WITH n CREATE (:Copy) } RETURN n', 'CREATE'],
    ['MATCH (n) FOREACH (x IN [1] | SET n.y = x)', 'SET'],
  ])('finds the writing clause of %s', (query, clause) => {
    expect(findWritingClause(query)).toBe(clause);
  });

  it.each([
    'MATCH (n:Person) RETURN n',
    "MATCH (n) WHERE n.text = 'CREATE (x) SET y' RETURN n",
    'MATCH (n) WHERE n.text = "DELETE \\" MERGE" RETURN n',
    'MATCH (n) // CREATE in a comment\nRETURN n',
    'MATCH (n) /* SET n.x = 1 */ RETURN n',
    'MATCH (n:Create)-[:DELETE]->(m:Set&Merge) RETURN n.set, n.`merge`',
    'RETURN {create: 1, delete: 2} AS m, $set AS p',
    'MATCH (n) RETURN count(n) AS set',
    'MATCH (n) CALL { WITH n RETURN n.x AS x } RETURN x',
  ])('finds none in %s', (query) => {
    expect(findWritingClause(query)).toBeUndefined();
  });
});

describe('deriveReturnColumns', () => {
  it.each([
    ['MATCH (n) RETURN n', ['n']],
    ['MATCH (n) RETURN n, count(*) AS c', ['n', 'c']],
    ['MATCH (n) RETURN DISTINCT n.name, n.age AS `the age` ORDER BY n.name SKIP 1 LIMIT 2', ['n.name', 'the age']],
    ['MATCH (n) WITH n, {a: 1, b: 2} AS m RETURN m', ['m']],
    ['MATCH (n) RETURN [x IN n.list WHERE x > 1 | x * 2] AS doubled, {k: n.k, l: [1, 2]} AS map', ['doubled', 'map']],
    ["MATCH (n) WHERE n.note = 'RETURN nonsense' RETURN n", ['n']],
    ['MATCH (n) RETURN n.x AS x UNION MATCH (m) RETURN m.x AS x', ['x']],
    ['CREATE (n:Person)', []],
    ['MATCH (n) CALL { WITH n RETURN n.x AS inner } RETURN inner;', ['inner']],
  ])('derives the columns of %s', (query, columns) => {
    expect(deriveReturnColumns(query)).toEqual({ ok: true, columns });
  });

  it.each([
    ["RETURN 'a' + 'b'", "the RETURN item ''a' + 'b'' has no simple name (add AS <name>)"],
    ['MATCH (n) RETURN count(*)', "the RETURN item 'count(*)' has no simple name (add AS <name>)"],
    ['MATCH (n) RETURN *', 'RETURN * does not name its columns'],
    ['MATCH (n) RETURN n, n', "the RETURN clause names the column 'n' twice"],
  ])('explains why %s needs declared columns', (query, problem) => {
    expect(deriveReturnColumns(query)).toEqual({ ok: false, problem });
  });
});

describe('toBatchQuery', () => {
  it('unwinds the batch and reads each parameter from the row, outside strings and comments', () => {
    expect(toBatchQuery("MERGE (n:Article {id: $id}) SET n.title = $title, n.note = '$id stays' // $x too", 'batch', 'row')).toBe(
      "UNWIND $batch AS row MERGE (n:Article {id: row.id}) SET n.title = row.title, n.note = '$id stays' // $x too",
    );
  });

  it('quotes a parameter name that is no plain identifier, and keeps a query already written for batches', () => {
    expect(toBatchQuery('CREATE (:N {v: $0})', 'batch', 'row')).toBe('UNWIND $batch AS row CREATE (:N {v: row.`0`})');
    const written = 'UNWIND $batch AS item CREATE (:N {id: item.id})';
    expect(toBatchQuery(written, 'batch', 'row')).toBe(written);
  });
});

describe('fieldsRead', () => {
  const BATCH = { parameter: 'batch', row: 'row' };

  it("reads a statement's parameters, outside strings and comments", () => {
    expect(fieldsRead("MERGE (n:Article {id: $id}) SET n.title = $title, n.note = '$secret' // $x")).toEqual(new Set(['id', 'title']));
  });

  it('reads the row fields of a statement written for batches, or gives up when a whole row is read', () => {
    expect(fieldsRead('UNWIND $batch AS row MERGE (d:Doc {id: row.id}) WITH d, row UNWIND row._keywords AS k RETURN d', BATCH)).toEqual(
      new Set(['id', '_keywords']),
    );
    expect(fieldsRead('UNWIND $batch AS row CREATE (d:Doc) SET d = row', BATCH)).toBeUndefined();
  });
});

describe('mergeKeys', () => {
  it('finds the label and the map keys of each MERGE node pattern, in order and once', () => {
    const query =
      'UNWIND $batch AS row MERGE (d:Document {id: row.id}) SET d.title = row.title ' +
      'WITH d, row UNWIND row.mentions AS m MERGE (e:Entity {label: m.label, value: m.value, extra: {nested: 1}}) ' +
      'MERGE (:Document {id: m.document}) MERGE (d)-[:MENTIONS]->(e)';
    expect(mergeKeys(query)).toEqual([
      { label: 'Document', properties: ['id'] },
      { label: 'Entity', properties: ['label', 'value', 'extra'] },
    ]);
  });

  it('leaves out what no single index serves or that is no MERGE', () => {
    expect(mergeKeys('MERGE (n:Tag)')).toEqual([]);
    expect(mergeKeys('MERGE (n:A:B {id: 1})')).toEqual([]);
    expect(mergeKeys('MERGE (n {id: 1})')).toEqual([]);
    expect(mergeKeys('MERGE (n:`Odd label` {id: 1})')).toEqual([]);
    expect(mergeKeys("MATCH (n:Tag {id: 1}) SET n.note = 'MERGE (x:Y {z: 1})' RETURN n.merge AS merge")).toEqual([]);
    expect(mergeKeys('MERGE (n:`Tag` {`id`: 1})')).toEqual([{ label: 'Tag', properties: ['id'] }]);
  });
});
