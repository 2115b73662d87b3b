import { type GraphPropertyIndex, type GraphStore } from '@loom/graph';
import { type FoundRelation } from './rule-relations.js';

// Relations written into a target graph (the knowledge graph):
//   (:Entity {id, name, type})-[:<RELATION> {rule, sentence, document}]->(:Entity)
// An entity is identified by its type and its text (`PERSON:Ada Lovelace`); a relationship by its two entities, type,
// rule, document and sentence, so writing the same relations again changes nothing. On AGE a MERGE of a relationship
// between matched nodes creates nothing, so both are "create when missing", the same text on Neo4j.

/** The property the target graph's statements look entities up by. */
export const ENTITY_INDEXES: readonly GraphPropertyIndex[] = [{ label: 'Entity', property: 'id' }];

/** The id of an entity node: its type and its text with runs of whitespace as one space. */
export function entityId(type: string, text: string): string {
  return `${type}:${text.replace(/\s+/g, ' ').trim()}`;
}

/** Writes relations into the target graph in one transaction: the missing entities, then the missing relationships. */
export async function writeRelations(target: GraphStore, relations: readonly FoundRelation[], signal?: AbortSignal): Promise<void> {
  if (relations.length === 0) return;
  const entities = new Map<string, { id: string; name: string; type: string }>();
  const byType = new Map<string, Map<string, Record<string, unknown>>>();
  for (const relation of relations) {
    const from = entityId(relation.subject.type, relation.subject.text);
    const to = entityId(relation.object.type, relation.object.text);
    entities.set(from, { id: from, name: relation.subject.text, type: relation.subject.type });
    entities.set(to, { id: to, name: relation.object.text, type: relation.object.type });
    const row = { from, to, rule: relation.rule, sentence: relation.sentence, document: relation.document };
    const rows = byType.get(relation.relation) ?? new Map<string, Record<string, unknown>>();
    rows.set(JSON.stringify(row), row);
    byType.set(relation.relation, rows);
  }
  const options = signal === undefined ? {} : { signal };
  await target.writeTransaction(async (tx) => {
    await tx.run(
      'UNWIND $entities AS e OPTIONAL MATCH (x:Entity) WHERE x.id = e.id WITH e, x WHERE x IS NULL CREATE (:Entity {id: e.id, name: e.name, type: e.type})',
      { entities: [...entities.values()] },
      options,
    );
    for (const [type, rows] of byType) {
      // the type comes from a validated rule (upper-case identifier): it can be written into the text
      await tx.run(
        `UNWIND $rows AS r MATCH (a:Entity), (b:Entity) WHERE a.id = r.from AND b.id = r.to ` +
          `AND NOT exists { MATCH (a)-[x:${type}]->(b) WHERE x.rule = r.rule AND x.sentence = r.sentence AND x.document = r.document } ` +
          `CREATE (a)-[:${type} {rule: r.rule, sentence: r.sentence, document: r.document}]->(b)`,
        { rows: [...rows.values()] },
        options,
      );
    }
  });
}
