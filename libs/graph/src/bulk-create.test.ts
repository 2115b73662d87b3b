import { describe, expect, it } from 'vitest';
import { ageNodeInsert, ageRelationshipInsert } from './age-bulk.js';
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
  it('are as many, with the same text, for 2 rows as for 500: one per batch on Neo4j, one per node batch and one in all on AGE', () => {
    const small = checkBulkCreate(write(2));
    const large = checkBulkCreate(write(500));
    const neo4jTexts = (checked: typeof small) => neo4jBulkStatements(checked).map((statement) => statement.text);
    expect(neo4jTexts(large)).toHaveLength(4);
    expect(neo4jTexts(large)).toEqual(neo4jTexts(small));
    const ageTexts = (checked: typeof small) => [
      ...checked.nodes.map((batch) => ageNodeInsert('g_graph', batch).text),
      ageRelationshipInsert('g_graph', checked.relationships).text,
    ];
    expect(ageTexts(large)).toHaveLength(3);
    expect(ageTexts(large)).toEqual(ageTexts(small));
  });

  it('keeps the first node of each key of a skipExisting batch and drops empty batches', () => {
    const checked = checkBulkCreate({
      nodes: [
        { label: 'Tag', skipExisting: 'id', nodes: [{ id: 'a', value: 1 }, { id: 1 }, { id: 'a', value: 2 }, { id: '1' }] },
        { label: 'Empty', nodes: [] },
      ],
      relationships: [{ type: 'NONE', from: { label: 'Tag', property: 'id' }, to: { label: 'Tag', property: 'id' }, relationships: [] }],
    });
    expect(checked).toEqual({ nodes: [{ label: 'Tag', skipExisting: 'id', nodes: [{ id: 'a', value: 1 }, { id: 1 }, { id: '1' }] }], relationships: [] });
  });

  it('refuses names that are not identifiers, naming the field', () => {
    const has = { type: 'HAS', from: { label: 'Doc', property: 'id' }, to: { label: 'Tag', property: 'id' }, relationships: [] };
    expect(() => checkBulkCreate({ nodes: [{ label: 'Doc`) DETACH DELETE n //', nodes: [] }] })).toThrow(/nodes\[0\]\.label/);
    expect(() => checkBulkCreate({ relationships: [{ ...has, type: 'HAS-A' }] })).toThrow(/relationships\[0\]\.type/);
    expect(() => checkBulkCreate({ relationships: [{ ...has, to: { label: 'Tag', property: "id'" } }] })).toThrow(/relationships\[0\]\.to\.property/);
    expect(() => checkBulkCreate({ nodes: [{ label: 'Tag', skipExisting: 'id', nodes: [{ id: true }] }] })).toThrow(/nodes\[0\]\.nodes\[0\]\.id/);
  });
});
