import { describe, expect, it } from 'vitest';
import { annotationEndpoint, KEYWORD_EXTRACTION_PARAMETERS, skillViolations } from './skill.js';
import { type Skill, type SkillCapabilityName } from './workflow.js';

const fields = (skill: Skill, capability: SkillCapabilityName, options = {}) =>
  skillViolations(skill, capability, 'skill', options).map((violation) => [violation.field, violation.reason]);

describe('skillViolations', () => {
  it('takes a valid skill of each capability', () => {
    expect(fields({ name: 'nlp', url: 'http://localhost:8085/annotate', pipeline: 'default' }, 'ENTITY_EXTRACTION')).toStrictEqual([]);
    expect(fields({ name: 'nlp v2', url: 'http://localhost:8085/v2/annotate', pipeline: 'tech', version: 'v2' }, 'ENTITY_EXTRACTION')).toStrictEqual([]);
    const parameters = Object.fromEntries(KEYWORD_EXTRACTION_PARAMETERS.map((name) => [name, 1]));
    expect(fields({ name: 'kw', url: 'http://localhost:8086/extractKeywords', parameters }, 'KEYWORD_EXTRACTION')).toStrictEqual([]);
    expect(fields({ name: 'web', url: 'http://localhost:8087/' }, 'WEB_DATA_EXTRACTION')).toStrictEqual([]);
    expect(fields({ name: 'pdf', url: 'https://tika.internal:8089' }, 'PDF_PARSING')).toStrictEqual([]);
  });

  it('needs a name and an absolute http(s) url without credentials, for every capability', () => {
    expect(fields({ name: '', url: '' }, 'PDF_PARSING')).toStrictEqual([
      ['skill.name', 'MISSING_FIELD'],
      ['skill.url', 'MISSING_FIELD'],
    ]);
    expect(fields({ name: '-bad', url: 'ftp://x/annotate' }, 'WEB_DATA_EXTRACTION')).toStrictEqual([
      ['skill.name', 'INVALID_VALUE'],
      ['skill.url', 'INVALID_VALUE'],
    ]);
    const withUser = skillViolations({ name: 'pdf', url: 'http://me:secret@localhost:8089' }, 'PDF_PARSING', 'skill');
    expect(withUser).toStrictEqual([expect.objectContaining({ field: 'skill.url', reason: 'INVALID_VALUE' })]);
    expect(JSON.stringify(withUser)).not.toContain('secret');
  });

  it('entity extraction: url ends in /annotate or /v2/annotate, pipeline required, version agreeing with the url', () => {
    expect(fields({ name: 'nlp', url: 'http://localhost:8085/annotation' }, 'ENTITY_EXTRACTION')).toStrictEqual([
      ['skill.url', 'INVALID_VALUE'],
      ['skill.pipeline', 'MISSING_FIELD'],
    ]);
    expect(fields({ name: 'nlp', url: 'http://localhost:8085/v2/annotate', pipeline: 'default' }, 'ENTITY_EXTRACTION')).toStrictEqual([
      ['skill.version', 'INVALID_VALUE'],
    ]);
    expect(fields({ name: 'nlp', url: 'http://localhost:8085/annotate', pipeline: 'default', version: 'v2' }, 'ENTITY_EXTRACTION')).toStrictEqual([
      ['skill.version', 'INVALID_VALUE'],
    ]);
    expect(fields({ name: 'nlp', url: 'http://localhost:8085/annotate', pipeline: 'default', version: 'v3' }, 'ENTITY_EXTRACTION')).toStrictEqual([
      ['skill.version', 'INVALID_VALUE'],
    ]);
    expect(fields({ name: 'nlp', url: 'http://localhost:8085/annotate', pipeline: 'default', parameters: { damp: 1 } }, 'ENTITY_EXTRACTION')).toStrictEqual([
      ['skill.parameters', 'NOT_APPLICABLE'],
    ]);
  });

  it("keyword extraction: url with /extractKeywords, parameters among the specification's names only", () => {
    expect(
      fields(
        { name: 'kw', url: 'http://localhost:8086/keywords', parameters: { damp: 0.85, dampingFactor: 1, allowedDependencies: [] } },
        'KEYWORD_EXTRACTION',
      ),
    ).toStrictEqual([
      ['skill.url', 'INVALID_VALUE'],
      ['skill.parameters.dampingFactor', 'UNKNOWN_PARAMETER'],
      ['skill.parameters.allowedDependencies', 'UNKNOWN_PARAMETER'],
    ]);
    expect(fields({ name: 'kw', url: 'http://localhost:8086/extractKeywords', pipeline: 'default', version: 'v2' }, 'KEYWORD_EXTRACTION')).toStrictEqual([
      ['skill.pipeline', 'NOT_APPLICABLE'],
      ['skill.version', 'NOT_APPLICABLE'],
    ]);
  });

  it('web data and PDF: name and url only', () => {
    expect(fields({ name: 'web', url: 'http://localhost:8087', pipeline: 'x', parameters: { a: 1 } }, 'WEB_DATA_EXTRACTION')).toStrictEqual([
      ['skill.pipeline', 'NOT_APPLICABLE'],
      ['skill.parameters', 'NOT_APPLICABLE'],
    ]);
  });

  it('refuses a capability other than the one checked against', () => {
    expect(fields({ name: 'pdf', url: 'http://localhost:8089', capability: 'PDF_PARSING' }, 'WEB_DATA_EXTRACTION')).toStrictEqual([
      ['skill.capability', 'INVALID_VALUE'],
    ]);
  });

  it('takes a name without url only when asked to (workflows: resolved from the registry at start)', () => {
    expect(fields({ name: 'nlp', url: '' }, 'ENTITY_EXTRACTION', { allowNameOnly: true })).toStrictEqual([]);
    expect(fields({ name: 'nlp', url: '' }, 'ENTITY_EXTRACTION')).toStrictEqual([['skill.url', 'MISSING_FIELD']]);
  });
});

describe('annotationEndpoint', () => {
  it('tells /annotate from /v2/annotate', () => {
    expect(annotationEndpoint('http://h:8085/annotate')).toBe('standard');
    expect(annotationEndpoint('http://h:8085/nlp/v2/annotate')).toBe('v2');
    expect(annotationEndpoint('http://h:8085/v2')).toBeUndefined();
    expect(annotationEndpoint('not a url')).toBeUndefined();
  });
});
