import { describe, expect, it } from 'vitest';
import { ageBulkInsert } from './age-bulk.js';
import { checkBulkCreate, neo4jBulkStatements } from './bulk-create.js';
import type { GraphBulkCreate } from './graph-store.js';

/** A bulk write of `rows` documents' worth of nodes and relationships. */
function write(rows: number): GraphBulkCreate {
  const ids = Array.from({ length: rows }, (_, i) => `n${i}`);
  return {
    nodes: [
      { label: 'Doc', nodes: ids.map((id) => ({ id, text: `text of ${id}` })) },
      { label: 'Tag', skipExisting: 'id', nodes: ids.map((id, i) => ({ id: `tag${i % 3}`, value: id })) },
    ],
    relationships: [
      {
        type: 'HAS',
        from: { label: 'Doc', property: 'id' },
        to: { label: 'Tag', property: 'id' },
        relationships: ids.map((id, i) => ({ from: id, to: `tag${i % 3}` })),
      },
      {
        type: 'NEXT',
        from: { label: 'Doc', property: 'id' },
        to: { label: 'Doc', property: 'id' },
        relationships: ids.slice(1).map((id, i) => ({ from: ids[i]!, to: id })),
      },
    ],
  };
}

describe('bulk create statements', () => {
  it('are as many, with the same text, for 2 rows as for 500: one per node batch and pair of end labels on Neo4j, one in all on AGE', () => {
    const small = checkBulkCreate(write(2));
    const large = checkBulkCreate(write(500));
    const neo4jTexts = (checked: typeof small) => neo4jBulkStatements(checked).map((statement) => statement.text);
    expect(neo4jTexts(large)).toHaveLength(4);
    expect(neo4jTexts(large)).toEqual(neo4jTexts(small));
    const tables = (label: { name: string }) => ({ id: label.name.length, sequence: `${label.name}_id_seq` });
    expect(ageBulkInsert('g_graph', large, tables).text).toEqual(ageBulkInsert('g_graph', small, tables).text);
  });

  it('on AGE: one statement, the ids of nodes written by it carried to its relationships by row, only other ends looked up by key', () => {
    const tables = (label: { name: string }) => ({ id: label.name === 'Doc' ? 3 : 4, sequence: `${label.name}_id_seq` });
    const statement = ageBulkInsert(
      'g_graph',
      checkBulkCreate({
        nodes: [
          { label: 'Doc', nodes: [{ id: 'd1', title: 'it\'s "one"', pages: 3, missing: null }, { id: 'd2' }] },
          { label: 'Tag', skipExisting: 'id', nodes: [{ id: 't1' }] },
        ],
        relationships: [
          {
            type: 'HAS',
            from: { label: 'Doc', property: 'id' },
            to: { label: 'Tag', property: 'id' },
            relationships: [
              { from: 'd2', to: 't1', properties: { weight: 2, none: null } },
              { from: 'stored', to: 't1' },
            ],
          },
        ],
      }),
      tables,
    );
    expect(statement.text.match(/ AS \(INSERT INTO /g)).toHaveLength(3);
    expect(statement.text).toContain(`ag_catalog._graphid(3, nextval('"g_graph"."Doc_id_seq"'::regclass))`);
    const rows = (...values: string[]) => values.join('\u001e');
    expect(statement.values).toEqual([
      rows('{"id":"d1","pages":3,"title":"it\'s \\"one\\""}', '{"id":"d2"}'),
      '{"id":"t1"}',
      '"t1"',
      '2,null',
      rows('null', '"stored"'),
      '1,1',
      rows('null', 'null'),
      rows('{"weight":2}', '{}'),
    ]);
  });

  it('on Neo4j: one statement per pair of end labels whatever the types, properties named in the text, rows in one map parameter', () => {
    const ends = { from: { label: 'Token', property: 'id' }, to: { label: 'Token', property: 'id' } };
    const statements = (types: readonly string[]) =>
      neo4jBulkStatements(
        checkBulkCreate({
          nodes: [
            {
              label: 'Token',
              properties: ['id', 'lemma', 'ne'],
              nodes: [
                { id: 't1', lemma: 'go' },
                { id: 't2', ne: 'PERSON' },
              ],
            },
          ],
          relationships: types.map((type) => ({ type, ...ends, relationships: [{ from: 't1', to: 't2', properties: { specific: null } }] })),
        }),
      );
    const two = statements(['NSUBJ', 'OBJ']);
    expect(two.map((statement) => statement.text)).toEqual([
      'UNWIND $input.rows AS row CREATE (n:`Token` {`id`: row[0], `lemma`: row[1], `ne`: row[2]})',
      'UNWIND $input.rows AS row MATCH (a:`Token` {`id`: row[0]}) MATCH (b:`Token` {`id`: row[1]}) CREATE (a)-[:$(row[2]) {`specific`: row[3]}]->(b)',
    ]);
    expect(two.map((statement) => statement.parameters)).toEqual([
      {
        input: {
          rows: [
            ['t1', 'go', null],
            ['t2', null, 'PERSON'],
          ],
        },
      },
      {
        input: {
          rows: [
            ['t1', 't2', 'NSUBJ', null],
            ['t1', 't2', 'OBJ', null],
          ],
        },
      },
    ]);
    expect(statements(['ROOT']).map((statement) => statement.text)).toEqual(two.map((statement) => statement.text));
  });

  it('refuses a property name that is not an identifier, or not declared, naming the field', () => {
    expect(() => checkBulkCreate({ nodes: [{ label: 'Doc', nodes: [{ id: 'a' }, { 'x`})': 1 }] }] })).toThrow(/nodes\[0\]\.nodes\[1\]\.x`\}\)/);
    expect(() => checkBulkCreate({ nodes: [{ label: 'Doc', properties: ['id'], nodes: [{ id: 'a', text: 'b' }] }] })).toThrow(/nodes\[0\]\.nodes\[0\]\.text/);
    expect(() => checkBulkCreate({ nodes: [{ label: 'Doc', properties: ['bad name'], nodes: [] }] })).toThrow(/nodes\[0\]\.properties\[0\]/);
    const has = { type: 'HAS', from: { label: 'Doc', property: 'id' }, to: { label: 'Tag', property: 'id' } };
    expect(() =>
      checkBulkCreate({
        relationships: [
          {
            ...has,
            relationships: [
              { from: 'a', to: 'b' },
              { from: 'a', to: 'b', properties: { 'a-b': 1 } },
            ],
          },
        ],
      }),
    ).toThrow(/relationships\[0\]\.relationships\[1\]\.properties\.a-b/);
  });

  it('keeps the first node of each key of a skipExisting batch and drops empty batches', () => {
    const checked = checkBulkCreate({
      nodes: [
        { label: 'Tag', skipExisting: 'id', nodes: [{ id: 'a', value: 1 }, { id: 1 }, { id: 'a', value: 2 }, { id: '1' }] },
        { label: 'Empty', nodes: [] },
      ],
      relationships: [{ type: 'NONE', from: { label: 'Tag', property: 'id' }, to: { label: 'Tag', property: 'id' }, relationships: [] }],
    });
    expect(checked).toEqual({
      nodes: [{ label: 'Tag', skipExisting: 'id', nodes: [{ id: 'a', value: 1 }, { id: 1 }, { id: '1' }], properties: ['id', 'value'] }],
      relationships: [],
    });
  });

  it('refuses names that are not identifiers, naming the field', () => {
    const has = { type: 'HAS', from: { label: 'Doc', property: 'id' }, to: { label: 'Tag', property: 'id' }, relationships: [] };
    expect(() => checkBulkCreate({ nodes: [{ label: 'Doc`) DETACH DELETE n //', nodes: [] }] })).toThrow(/nodes\[0\]\.label/);
    expect(() => checkBulkCreate({ relationships: [{ ...has, type: 'HAS-A' }] })).toThrow(/relationships\[0\]\.type/);
    expect(() => checkBulkCreate({ relationships: [{ ...has, to: { label: 'Tag', property: "id'" } }] })).toThrow(/relationships\[0\]\.to\.property/);
    expect(() => checkBulkCreate({ nodes: [{ label: 'Tag', skipExisting: 'id', nodes: [{ id: true }] }] })).toThrow(/nodes\[0\]\.nodes\[0\]\.id/);
  });
});
