import { describe, expect, it } from 'vitest';
import { batchNodeMerge, foldNodeMergeRows } from './node-merge.js';

describe('batchNodeMerge', () => {
  it('takes apart UNWIND $rows AS row MERGE (n:Label {key: row.field}) with SET items n.p = row.q', () => {
    expect(batchNodeMerge('UNWIND $batch AS row MERGE (p:Person {id: row.id}) SET p.name = row.name')).toEqual({
      parameter: 'batch',
      label: 'Person',
      key: [{ property: 'id', field: 'id' }],
      sets: [{ property: 'name', field: 'name' }],
    });
    expect(batchNodeMerge('unwind $rows as r merge (e:`Entity` {label: r.kind, value: r.text}) set e.a = r.a, e.b = r.b set e.c = r.c;')).toEqual({
      parameter: 'rows',
      label: 'Entity',
      key: [
        { property: 'label', field: 'kind' },
        { property: 'value', field: 'text' },
      ],
      sets: ['a', 'b', 'c'].map((name) => ({ property: name, field: name })),
    });
    expect(batchNodeMerge('UNWIND $batch AS row MERGE (d:Document {id: row.id})')).toMatchObject({ sets: [] });
  });

  it('leaves every other statement to the database', () => {
    for (const query of [
      'MERGE (p:Person {id: $id}) SET p.name = $name', // not a batch
      'UNWIND $batch AS row MERGE (p:Person {id: row.id}) SET p.name = row.name RETURN p', // records
      'UNWIND $batch AS row MERGE (p:Person {id: row.id}) ON CREATE SET p.name = row.name',
      'UNWIND $batch AS row MERGE (p:Person {id: row.id}) SET p.id = row.other', // a key property changed
      'UNWIND $batch AS row MERGE (p:Person {id: row.id}) SET p.n = row.n + 1', // an expression
      'UNWIND $batch AS row MERGE (p:Person {id: row.id}) SET p.n = row.a.b',
      'UNWIND $batch AS row MERGE (p:Person {id: row.id}) SET p += row.map',
      "UNWIND $batch AS row MERGE (p:Person {id: row.id, kind: 'x'})", // a literal in the key
      'UNWIND $batch AS row MERGE (p:Person:Other {id: row.id})',
      'UNWIND $batch AS row MERGE (p:Person {id: row.id})-[:KNOWS]->(q:Person {id: row.friend})',
      'UNWIND $batch AS row MERGE (p:Person {id: row.id}) SET q.name = row.name',
      'UNWIND $batch AS row MERGE (p:Person {id: row.id, id: row.other})',
      'UNWIND $batch AS row MERGE (p:Person {id: row.id}) WITH p MATCH (q) SET q.x = 1',
    ]) {
      expect(batchNodeMerge(query), query).toBeUndefined();
    }
  });
});

describe('foldNodeMergeRows', () => {
  const merge = batchNodeMerge('UNWIND $batch AS row MERGE (p:Person {id: row.id}) SET p.name = row.name, p.age = row.age')!;

  it('one entry a distinct key in the order first seen, each SET property the last row value, null or missing ones removed', () => {
    expect(
      foldNodeMergeRows(merge, [
        { id: 'a', name: 'A', age: 3 },
        { id: 1, name: 'one' },
        { id: '1', name: 'string one', age: 5 },
        { id: 'a', name: 'A again', age: null },
        { id: 1, age: 7 }, // name missing: set to null
      ]),
    ).toEqual({
      keys: [{ id: 'a' }, { id: 1 }, { id: '1' }],
      sets: [{ name: 'A again' }, { age: 7 }, { name: 'string one', age: 5 }],
      removed: [['age'], ['name'], []],
    });
  });

  it('gives up on a key the graph would not compare by equality (null, missing, a list, a map) or rows that are not objects', () => {
    for (const rows of [[{ id: null }], [{ name: 'no key' }], [{ id: [1] }], [{ id: { a: 1 } }], [{ id: Number.NaN }], ['a'], { id: 'a' }]) {
      expect(foldNodeMergeRows(merge, rows)).toBeUndefined();
    }
  });
});
