import { describe, expect, it } from 'vitest';
import { trailingRelationshipCreate } from './trailing-create.js';

const KEYWORDS =
  'UNWIND $batch AS row MERGE (d:Document {id: row.id}) SET d.title = row.title ' +
  'WITH d, row UNWIND row._keywords AS keyword MERGE (k:Keyword {value: keyword.value}) ' +
  'WITH DISTINCT d, k, keyword WHERE NOT exists((d)-[:HAS_KEYWORD]->(k)) ' +
  'CREATE (d)-[:HAS_KEYWORD {relevance: keyword.relevance}]->(k)';

describe('trailingRelationshipCreate', () => {
  it("takes apart the text-to-graph example's statement: the head, the type, the ends and the property expressions", () => {
    expect(trailingRelationshipCreate(KEYWORDS)).toEqual({
      head: KEYWORDS.slice(0, KEYWORDS.lastIndexOf(' CREATE')),
      type: 'HAS_KEYWORD',
      from: 'd',
      to: 'k',
      properties: [{ key: 'relevance', expression: 'keyword.relevance' }],
    });
  });

  it.each([
    [
      'UNWIND $batch AS row MERGE (d:Document {id: row.id}) WITH d, row UNWIND keys(row._merged_entities) AS label ' +
        'UNWIND row._merged_entities[label] AS mention MERGE (e:Entity {label: label, value: mention.value}) ' +
        'WITH DISTINCT d, e WHERE NOT exists((d)-[:MENTIONS]->(e)) CREATE (d)-[:MENTIONS]->(e)',
      { type: 'MENTIONS', from: 'd', to: 'e', properties: [] },
    ],
    ['MATCH (a:A {id: $a}), (b:B) WHERE NOT exists((a)-[:R]->(b)) CREATE (a)-[:R]->(b)', { type: 'R', from: 'a', to: 'b', properties: [] }],
    ['MATCH (a), (b) create (b)<-[r:R {x: a.v + 1, y: [1, 2], z: $p}]-(a);', { from: 'a', to: 'b', properties: [{ key: 'x' }, { key: 'y' }, { key: 'z' }] }],
    ['MERGE (a:A {id: 1}) ON CREATE SET a.new = true MERGE (b:B {id: 2}) WITH * CREATE (a)-[:R]->(b)', { from: 'a', to: 'b' }],
    ['MATCH (a) WITH a MATCH (b) WHERE b.name STARTS WITH a.name CREATE (a)-[:R {}]->(b)', { from: 'a', to: 'b', properties: [] }],
  ])('accepts %s', (query, expected) => {
    expect(trailingRelationshipCreate(query)).toMatchObject(expected);
  });

  it.each([
    ['a CREATE that makes a node', 'MATCH (a) CREATE (a)-[:R]->(b)'],
    ['a node not carried by the WITH', 'MATCH (a), (b) WITH a CREATE (a)-[:R]->(b)'],
    ['a variable renamed by AS', 'MATCH (a), (x) WITH a, x AS b CREATE (a)-[:R]->(b)'],
    ['a variable bound to a relationship', 'MATCH (a)-[b]->() CREATE (a)-[:R]->(b)'],
    ['a node that may be null', 'MATCH (a) OPTIONAL MATCH (b:B) CREATE (a)-[:R]->(b)'],
    ['a node deleted before', 'MATCH (a), (b) DETACH DELETE b CREATE (a)-[:R]->(b)'],
    ['a clause after the CREATE', 'MATCH (a), (b) CREATE (a)-[:R]->(b) RETURN a'],
    ['two relationships', 'MATCH (a), (b), (c) CREATE (a)-[:R]->(b)-[:R]->(c)'],
    ['a path variable', 'MATCH (a), (b) CREATE p = (a)-[:R]->(b)'],
    ['labels on a bound node', 'MATCH (a), (b) CREATE (a:A)-[:R]->(b)'],
    ['a map parameter', 'MATCH (a), (b) CREATE (a)-[:R $props]->(b)'],
    ['a map literal in a value (AGE drops its nulls)', 'MATCH (a), (b) CREATE (a)-[:R {m: {x: null}}]->(b)'],
    ['a key given twice', 'MATCH (a), (b) CREATE (a)-[:R {x: 1, x: 2}]->(b)'],
    ['a type that is not a plain identifier', 'MATCH (a), (b) CREATE (a)-[:`has type`]->(b)'],
    ['an undirected relationship', 'MATCH (a), (b) CREATE (a)-[:R]-(b)'],
    ['a relationship variable used elsewhere', 'MATCH (a), (b) WHERE a.r = 1 CREATE (a)-[r:R {r: r}]->(b)'],
    ['a CREATE in a string only', "MATCH (a) RETURN 'CREATE (a)-[:R]->(a)'"],
  ])('refuses %s', (_, query) => {
    expect(trailingRelationshipCreate(query)).toBeUndefined();
  });
});
