import { readFileSync } from 'node:fs';
import { parseRelationRules } from '@loom/domain';
import { describe, expect, it } from 'vitest';
import { ruleQuery } from './rule-cypher.js';

const shipped = parseRelationRules(JSON.parse(readFileSync(new URL('../../../../../examples/relations/rules.json', import.meta.url), 'utf8')) as unknown);
const queries = shipped.rules.map((rule) => ruleQuery(rule, shipped.lists));

describe('rule statements', () => {
  it('have no untyped and no variable-length relationship, and start every hop from a bound token of the same sentence', () => {
    for (const query of queries) {
      expect(query.statements.length, query.rule.name).toBe(query.branches.length);
      for (const [b, hops] of query.branches.entries()) {
        const cypher = query.statements[b]!.cypher;
        // untyped: `-[r]->` or `-[]->`; variable length: `*` inside brackets
        expect(cypher, query.rule.name).not.toMatch(/-\[[A-Za-z0-9_]*\]-|<-\[[A-Za-z0-9_]*\]-/);
        expect(cypher, query.rule.name).not.toMatch(/\[[^\]]*\*[^\]]*\]/);
        expect(cypher, query.rule.name).not.toMatch(/UNION/);
        expect(cypher.startsWith('UNWIND $input.ids AS wanted MATCH (d:AnnotatedText)-[:CONTAINS_SENTENCE]->(s:Sentence)'), query.rule.name).toBe(true);
        hops.forEach((_, i) => {
          // hop i+1 is a query part of its own, from t_i (bound by the part before), its token in sentence s
          expect(cypher, `${query.rule.name} path ${b} hop ${i + 1}`).toMatch(
            new RegExp(
              `WITH [^M]*\\bt${i}\\b[^M]* MATCH \\(t${i}\\)(<-|-)\\[r${i + 1}:[A-Z]+\\]-?>?\\(t${i + 1}:TagOccurrence\\), \\(s\\)-\\[:SENTENCE_TAG_OCCURRENCE\\]->\\(t${i + 1}\\)`,
            ),
          );
        });
      }
    }
  });

  it('resolve word lists into parameters, lower-cased', () => {
    const query = queries.find((candidate) => candidate.rule.name === 'leader-title-of')!;
    const values = query.statements.flatMap((statement) => Object.values(statement.values));
    expect(values).toContainEqual(shipped.lists!['leader-titles']!.map((word) => word.toLowerCase()));
  });

  it('write no value into the text, so that paths of one shape share one statement across rules', () => {
    const statements = queries.flatMap((query) => query.statements);
    for (const statement of statements) {
      // the only literals are the proper-noun UPOS; every value is an entry of the one map parameter
      expect(statement.cypher.match(/\$\w+/g)?.every((parameter) => parameter === '$input')).toBe(true);
      expect(statement.cypher.replaceAll("'PROPN'", '')).not.toMatch(/'|"|\[[^\]]*'/);
      for (const word of shipped.lists!['leader-titles']!) expect(statement.cypher).not.toContain(`'${word.toLowerCase()}'`);
    }
    const texts = new Set(statements.map((statement) => statement.cypher));
    expect(texts.size).toBeLessThan(statements.length);
  });
});
