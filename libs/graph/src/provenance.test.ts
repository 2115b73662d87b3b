import { describe, expect, it } from 'vitest';
import { ProvenanceRewriteError, withProvenance } from './provenance.js';

const marks = (variable: string): string =>
  `${variable}.loom_message_id = $loom_message_id, ${variable}.loom_source = $loom_source, ${variable}.loom_workflow = $loom_workflow, ` +
  `${variable}.loom_workflow_version = $loom_workflow_version, ${variable}.loom_written_at = $loom_written_at`;

describe('withProvenance', () => {
  it('sets the lineage properties after each clause on the nodes it introduces', () => {
    expect(withProvenance('MERGE (p:Person {id: $id}) SET p.name = $name')).toBe(`MERGE (p:Person {id: $id}) SET ${marks('p')} SET p.name = $name`);
    expect(withProvenance('CREATE (a:A {id: $a})-[:R]->(b:B {id: $b})')).toBe(`CREATE (a:A {id: $a})-[:R]->(b:B {id: $b}) SET ${marks('a')}, ${marks('b')}`);
  });

  it('keeps ON CREATE / ON MATCH with their MERGE and puts the SET before a RETURN', () => {
    expect(withProvenance('MERGE (p:P {id: $id}) ON CREATE SET p.n = 1 ON MATCH SET p.m = 2 RETURN p.id AS id')).toBe(
      `MERGE (p:P {id: $id}) ON CREATE SET p.n = 1 ON MATCH SET p.m = 2 SET ${marks('p')} RETURN p.id AS id`,
    );
  });

  it('names an anonymous node and leaves nodes bound before (MATCH, an earlier MERGE) alone', () => {
    expect(withProvenance('MATCH (a:A {id: $a}) MERGE (a)-[:R]->(:B {id: $b})')).toBe(
      `MATCH (a:A {id: $a}) MERGE (a)-[:R]->(loom_node_1:B {id: $b}) SET ${marks('loom_node_1')}`,
    );
    expect(withProvenance('MERGE (d:D {id: $d}) MERGE (t:T {n: $t}) MERGE (d)-[:HAS]->(t)')).toBe(
      `MERGE (d:D {id: $d}) SET ${marks('d')} MERGE (t:T {n: $t}) SET ${marks('t')} MERGE (d)-[:HAS]->(t)`,
    );
  });

  it('refuses writes it cannot reach, saying where', () => {
    expect(() => withProvenance('FOREACH (x IN $xs | CREATE (:X {v: x}))')).toThrow(ProvenanceRewriteError);
    expect(() => withProvenance('FOREACH (x IN $xs | CREATE (:X {v: x}))')).toThrow(/CREATE at character 21 is inside FOREACH/);
    expect(() => withProvenance('CREATE (:A) UNION CREATE (:B)')).toThrow(/UNION/);
  });

  it('leaves a statement that writes no node as it is', () => {
    expect(withProvenance('MATCH (n) RETURN n')).toBe('MATCH (n) RETURN n');
    expect(withProvenance("MATCH (n) WHERE n.text = 'MERGE (x)' RETURN n")).toBe("MATCH (n) WHERE n.text = 'MERGE (x)' RETURN n");
  });
});
