import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NlpPipeline } from '@loom/nlp';
import { type SkillServer } from '@loom/skill-service-kit';
import { postJson, startSkillForTest } from '@loom/skill-service-kit/testing';
import { annotationSkill } from '../src/index.js';

// loom's models on worker threads, which run the built module: the test target builds first
let server: SkillServer;

beforeAll(async () => {
  server = await startSkillForTest(annotationSkill, { workers: 2 });
});

afterAll(async () => {
  await server.stop();
});

const TEXTS = [
  'NASA launched the Artemis rocket from Florida.',
  'The committee met in Geneva on Tuesday. It approved the budget.',
  'Apache AGE stores graphs in PostgreSQL.',
  'Maria Lopez moved to Toronto last year.',
];

describe('annotation skill on worker threads', () => {
  it('answers concurrent requests each with the annotation of its own text, as the models give it in-process', async () => {
    const models = new NlpPipeline();
    const answers = await Promise.all(TEXTS.map((text, index) => postJson(server, '/v2/annotate', { text, id: `doc-${index}` })));
    answers.forEach((answer, index) => {
      const expected = models.annotate(TEXTS[index] as string);
      expect(answer.status).toBe(200);
      expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
      expect(answer.body).toMatchObject({ docId: `doc-${index}`, pipeline: 'default', sentences: expected.sentences });
    });
    const health = (await (await fetch(`${server.url}/health`)).json()) as { workers: number; maxWorkers: number };
    expect(health).toMatchObject({ workers: 2, maxWorkers: 2 });
  });

  it('gives the technology pipeline its dictionary in the workers', async () => {
    const answer = await postJson(server, '/annotate', { text: 'The space shuttle lowered its speed brake.', pipeline: 'technology' });
    expect(answer.status).toBe(200);
    expect((answer.body as { entities: Record<string, string[]> }).entities.technology).toContain('speed brake');
  });
});
