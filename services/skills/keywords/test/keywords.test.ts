import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { testDataDir } from '@loom/nlp-training';
import { afterEach, describe, expect, it } from 'vitest';
import { type SkillServer } from '@loom/skill-service-kit';
import { postJson, startSkillForTest } from '@loom/skill-service-kit/testing';
import { DEFAULT_TEXTRANK_OPTIONS, type Keyword, keywordsSkill, pageRank, textRank } from '../src/index.js';
import { constructedAnnotation } from './constructed-annotation.js';

// the fixture text committed with libs/nlp-training's test data
const NASA = readFileSync(join(testDataDir(), 'textrank', 'nasa-lesson-164448.txt'), 'utf8');
/** The keywords neo4j-nlp's own TextRank test expects on this text. */
const NEO4J_NLP_EXPECTED = [
  'flight failure',
  'speed brake',
  'space shuttle',
  'ground operation',
  'actuator',
  'installation',
  'flight',
  'gear',
  'shuttle',
  'brake',
  'speed',
  'failure',
  'unusual',
  'design',
];

const servers: SkillServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.stop()));
});

async function skill(): Promise<SkillServer> {
  // two worker threads, which run the built module: the test target builds first
  const server = await startSkillForTest(keywordsSkill, { workers: 2 });
  servers.push(server);
  return server;
}

describe('textRank', () => {
  it('finds the keywords neo4j-nlp expects on the NASA lesson, key phrases merged', () => {
    const annotation = constructedAnnotation(NASA);
    // word co-occurrence alone: the expected keywords and key phrases come out as they are
    const plain = textRank(annotation, { ...DEFAULT_TEXTRANK_OPTIONS, useDependencies: false }).map((keyword) => keyword.value);
    expect(plain.filter((value) => NEO4J_NLP_EXPECTED.includes(value)).length).toBeGreaterThanOrEqual(6);
    expect(plain).toEqual(expect.arrayContaining(['space shuttle', 'speed brake', 'flight failure', 'actuator']));
    // with dependencies (the default) modifiers join their heads: the expected phrases are found within longer ones
    const keywords = textRank(annotation).map((keyword) => keyword.value);
    const found = NEO4J_NLP_EXPECTED.filter((expected) => keywords.some((value) => ` ${value} `.includes(` ${expected} `)));
    expect(found).toEqual(expect.arrayContaining(['space shuttle', 'speed brake', 'flight failure', 'ground operation']));
    expect(keywords).toContain('space shuttle');
    // cleaned: no single word that is part of a key phrase found
    for (const value of keywords.filter((candidate) => !candidate.includes(' '))) {
      expect(keywords.filter((phrase) => phrase.includes(' ')).some((phrase) => phrase.includes(value))).toBe(false);
    }
  });

  it('ranks a hub word highest, and PageRank sums to one', () => {
    const graph = new Map([
      [
        'hub',
        new Map([
          ['a', { count: 1, starts: [] }],
          ['b', { count: 1, starts: [] }],
          ['c', { count: 1, starts: [] }],
        ]),
      ],
      ['a', new Map([['hub', { count: 1, starts: [] }]])],
      ['b', new Map([['hub', { count: 1, starts: [] }]])],
      ['c', new Map([['hub', { count: 1, starts: [] }]])],
    ]) as Parameters<typeof pageRank>[0];
    const ranks = pageRank(graph, DEFAULT_TEXTRANK_OPTIONS);
    expect([...ranks.entries()].sort((x, y) => y[1] - x[1])[0]![0]).toBe('hub');
    expect([...ranks.values()].reduce((sum, value) => sum + value, 0)).toBeCloseTo(1, 1);
  });

  it('keeps numbers, stop words and function words out, and honours parameters', () => {
    const annotation = constructedAnnotation(
      'The speed brake actuator of the space shuttle failed after 20 missions. The speed brake actuator was replaced. A new space shuttle flew 100 missions.',
    );
    const plain = textRank(annotation).map((keyword) => keyword.value);
    expect(plain).not.toContain('the');
    expect(plain.some((value) => /\d/.test(value))).toBe(false);
    expect(plain).not.toContain('new');
    const everything = textRank(annotation, { ...DEFAULT_TEXTRANK_OPTIONS, topXTags: 1, cleanKeywords: false });
    expect(everything.length).toBeGreaterThanOrEqual(plain.length);
    const noDependencies = textRank(annotation, { ...DEFAULT_TEXTRANK_OPTIONS, useDependencies: false });
    expect(noDependencies.length).toBeGreaterThan(0);
    const byDependencies = textRank(annotation, { ...DEFAULT_TEXTRANK_OPTIONS, dependenciesGraph: true, topXTags: 1 });
    expect(byDependencies.length).toBeGreaterThan(0);
  });

  it('answers nothing for an annotation without admitted words', () => {
    expect(textRank({ sentences: [] })).toEqual([]);
    expect(textRank(constructedAnnotation('It is. We are.'))).toEqual([]);
  });
});

describe('keywords skill', () => {
  it('POST /extractKeywords answers [{value, relevance}] most relevant first, also for an annotation sent as text', async () => {
    const server = await skill();
    const annotation = constructedAnnotation(NASA);
    const answer = await postJson(server, '/extractKeywords', { annotatedText: annotation });
    expect(answer.status).toBe(200);
    const keywords = answer.body as Keyword[];
    expect(keywords.length).toBeGreaterThan(3);
    for (const keyword of keywords) expect(keyword).toEqual({ value: expect.any(String), relevance: expect.any(Number) });
    expect(keywords.map((keyword) => keyword.relevance)).toEqual([...keywords.map((keyword) => keyword.relevance)].sort((a, b) => b - a));
    const asText = await postJson(server, '/extractKeywords', { annotatedText: JSON.stringify(annotation) });
    expect(asText.body).toEqual(keywords);
  });

  it('honours parameters and refuses bad ones naming the field', async () => {
    const server = await skill();
    const annotatedText = constructedAnnotation(NASA);
    const wide = await postJson(server, '/extractKeywords', {
      annotatedText,
      topXTags: 1,
      cleanKeywords: false,
      iterations: 50,
      damp: 0.9,
      threshold: 0.00001,
    });
    const narrow = await postJson(server, '/extractKeywords', { annotatedText });
    expect((wide.body as Keyword[]).length).toBeGreaterThan((narrow.body as Keyword[]).length);
    const stop = await postJson(server, '/extractKeywords', { annotatedText, stopwords: '+,actuator,shuttle' });
    expect((stop.body as Keyword[]).some((keyword) => keyword.value.includes('actuator') || keyword.value.includes('shuttle'))).toBe(false);
    const entities = await postJson(server, '/extractKeywords', {
      annotatedText,
      forbiddenNEs: ['NER_Number'],
      allowedDepencies: ['compound'],
      respectSentences: true,
      respectDirections: true,
    });
    expect(entities.status).toBe(200);

    expect(await postJson(server, '/extractKeywords', { annotatedText, motherNode: 12 })).toMatchObject({ status: 400, body: { field: 'motherNode' } });
    expect(await postJson(server, '/extractKeywords', { annotatedText, keywordLabel: 'Keyword' })).toMatchObject({
      status: 400,
      body: { field: 'keywordLabel' },
    });
    expect(await postJson(server, '/extractKeywords', { annotatedText, damp: 2 })).toMatchObject({ status: 400, body: { field: 'damp' } });
    expect(await postJson(server, '/extractKeywords', { annotatedText, iterations: 'many' })).toMatchObject({ status: 400, body: { field: 'iterations' } });
    expect(await postJson(server, '/extractKeywords', { annotatedText, colour: 1 })).toMatchObject({ status: 400, body: { field: 'colour' } });
    expect(await postJson(server, '/extractKeywords', {})).toMatchObject({ status: 400, body: { field: 'annotatedText' } });
    expect(await postJson(server, '/extractKeywords', { annotatedText: 'not json' })).toMatchObject({ status: 400, body: { field: 'annotatedText' } });
    const broken = { sentences: [{ tokens: annotatedText.sentences[0]!.tokens, basicDependencies: [{ dep: 'amod', governor: 999, dependent: 1 }] }] };
    expect(await postJson(server, '/extractKeywords', { annotatedText: broken })).toMatchObject({
      status: 400,
      body: { field: 'annotatedText.sentences[0].basicDependencies[0].governor' },
    });
  });

  it('serves 32 concurrent requests on its worker threads, each answer the in-process one', async () => {
    const server = await skill();
    const annotatedText = constructedAnnotation(NASA);
    const answers = await Promise.all(Array.from({ length: 32 }, () => postJson(server, '/extractKeywords', { annotatedText })));
    expect(new Set(answers.map((answer) => answer.status))).toEqual(new Set([200]));
    expect(new Set(answers.map((answer) => JSON.stringify(answer.body)))).toEqual(new Set([JSON.stringify(textRank(annotatedText, DEFAULT_TEXTRANK_OPTIONS))]));
    const health = (await (await fetch(`${server.url}/health`)).json()) as { workers: number; maxWorkers: number };
    expect(health).toMatchObject({ workers: 2, maxWorkers: 2 });
  });
});
