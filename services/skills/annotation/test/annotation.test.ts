import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type SkillServer } from '@loom/skill-service-kit';
import { postJson, startSkillForTest } from '@loom/skill-service-kit/testing';
import { createAnnotationSkill } from '../src/index.js';
import { ruleAnnotator } from './rule-annotator.js';

const skill = createAnnotationSkill({ annotator: ruleAnnotator });
const servers: SkillServer[] = [];
let dataDirectory: string;

beforeEach(() => {
  const root = mkdtempSync(join(tmpdir(), 'loom-annotation-'));
  dataDirectory = join(root, 'data');
  mkdirSync(dataDirectory);
  writeFileSync(join(dataDirectory, 'tech.tsv'), 'Apache AGE\tTECHNOLOGY\nNeo4j\tTECHNOLOGY\nloom\tPRODUCT\n');
  writeFileSync(join(dataDirectory, 'broken.tsv'), 'no type here\n');
  writeFileSync(join(root, 'outside.tsv'), 'secret\tTECHNOLOGY\n');
  symlinkSync(join(root, 'outside.tsv'), join(dataDirectory, 'link.tsv'));
});

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.stop()));
});

async function start(): Promise<SkillServer> {
  const server = await startSkillForTest(skill, { dataDirectory });
  servers.push(server);
  return server;
}

const TEXT = 'loom stores graphs in Apache AGE. Neo4j works too.';

describe('annotation skill', () => {
  it('answers the annotation of the default pipeline, with entities merged in /annotate and per token in /v2/annotate', async () => {
    const server = await start();
    const created = await postJson(server, '/pipeline/new', {
      name: 'tech',
      language: 'en',
      textProcessor: 'loom',
      annotators: ['tokenize', 'ssplit', 'ner'],
      nerRegexFiles: ['tech.tsv'],
    });
    expect(created).toMatchObject({ status: 200, body: { name: 'tech', created: true, dictionaryTerms: 3 } });

    const standard = await postJson(server, '/annotate', { text: TEXT, pipeline: 'tech', id: 'doc-1' });
    expect(standard.status).toBe(200);
    const body = standard.body as {
      docId: string;
      sentences: Array<{ tokens: Array<{ word: string; ner: string }>; entitymentions: unknown[] }>;
      entities: Record<string, string[]>;
    };
    expect(body.docId).toBe('doc-1');
    expect(body.sentences).toHaveLength(2);
    expect(body.sentences[0]!.tokens.map((token) => token.ner)).toEqual(['PRODUCT', 'O', 'O', 'O', 'TECHNOLOGY', 'TECHNOLOGY', 'O']);
    expect(body.entities).toEqual({ product: ['loom'], technology: ['Apache AGE', 'Neo4j'] });

    const v2 = await postJson(server, '/v2/annotate', { text: TEXT, pipeline: 'tech' });
    expect((v2.body as { entities: Record<string, string[]> }).entities).toEqual({ product: ['loom'], technology: ['Apache', 'AGE', 'Neo4j'] });

    const plain = await postJson(server, '/v2/annotate', { text: TEXT });
    expect(plain).toMatchObject({ status: 200, body: { pipeline: 'default', entities: {} } });
  });

  it('keeps pipelines across a restart', async () => {
    const first = await start();
    expect((await postJson(first, '/pipeline/new', { name: 'kept', nerRegexFiles: ['tech.tsv'] })).status).toBe(200);
    await first.stop();
    const second = await start();
    const pipelines = (await (await fetch(`${second.url}/pipelines`)).json()) as Array<{ name: string }>;
    expect(pipelines.map((pipeline) => pipeline.name)).toEqual(['default', 'technology', 'kept']);
    const answer = await postJson(second, '/annotate', { text: 'Neo4j', pipeline: 'kept' });
    expect((answer.body as { entities: Record<string, string[]> }).entities).toEqual({ technology: ['Neo4j'] });
    const redefined = await postJson(second, '/pipeline/new', { name: 'kept', annotators: ['tokenize'] });
    expect(redefined).toMatchObject({ status: 200, body: { created: false } });
  });

  it('refuses a bad pipeline naming the field, and writes nothing', async () => {
    const server = await start();
    const cases: Array<[unknown, string]> = [
      [{ name: 'p', annotators: ['tokenize', 'sentiment'] }, 'annotators[1]'],
      [{ name: 'p', language: 'tlh' }, 'language'],
      [{ name: 'p', textProcessor: 'com.example.Other' }, 'textProcessor'],
      [{ name: 'p', nerRegexFiles: ['missing.tsv'] }, 'nerRegexFiles[0]'],
      [{ name: 'p', nerRegexFiles: ['tech.tsv', '../outside.tsv'] }, 'nerRegexFiles[1]'],
      [{ name: 'p', nerRegexFiles: ['/etc/passwd'] }, 'nerRegexFiles[0]'],
      [{ name: 'p', nerRegexFiles: ['link.tsv'] }, 'nerRegexFiles[0]'],
      [{ name: 'p', nerRegexFiles: ['broken.tsv'] }, 'nerRegexFiles[0]'],
      [{ name: 'default' }, 'name'],
      [{ name: 'technology', nerRegexFiles: ['tech.tsv'] }, 'name'],
      [{ name: 'bad name!' }, 'name'],
      [{ annotators: ['tokenize'] }, 'name'],
      [{ name: 'p', annotators: 'tokenize' }, 'annotators'],
    ];
    for (const [body, field] of cases) {
      const answer = await postJson(server, '/pipeline/new', body);
      expect({ body, status: answer.status, field: (answer.body as { field?: string }).field }).toEqual({ body, status: 400, field });
    }
    const pipelines = (await (await fetch(`${server.url}/pipelines`)).json()) as Array<{ name: string }>;
    expect(pipelines.map((pipeline) => pipeline.name)).toEqual(['default', 'technology']);
  });

  it('has the built-in technology pipeline, whose shipped dictionary types aerospace and software terms', async () => {
    const server = await start();
    const answer = await postJson(server, '/annotate', {
      text: 'NASA tested the speed brake actuator of the Space Shuttle, and stored it in PostgreSQL.',
      pipeline: 'technology',
    });
    expect(answer.status).toBe(200);
    expect((answer.body as { entities: Record<string, string[]> }).entities.technology).toEqual(['speed brake actuator', 'Space Shuttle', 'PostgreSQL']);
  });

  it('answers 404 for an unknown pipeline, 400 for a missing text, 415 for a non-JSON body', async () => {
    const server = await start();
    expect(await postJson(server, '/annotate', { text: 'x', pipeline: 'nope' })).toMatchObject({
      status: 404,
      body: { error: 'unknown_pipeline', field: 'pipeline' },
    });
    expect(await postJson(server, '/v2/annotate', { pipeline: 'default' })).toMatchObject({ status: 400, body: { field: 'text' } });
    const text = await fetch(`${server.url}/annotate`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'hello' });
    expect(text.status).toBe(415);
  });

  it('serves 32 concurrent requests', async () => {
    const server = await start();
    await postJson(server, '/pipeline/new', { name: 'tech', nerRegexFiles: ['tech.tsv'] });
    const answers = await Promise.all(
      Array.from({ length: 32 }, (_, i) => postJson(server, i % 2 === 0 ? '/annotate' : '/v2/annotate', { text: `${TEXT} Run ${i}.`, pipeline: 'tech' })),
    );
    expect(answers.map((answer) => answer.status)).toEqual(Array(32).fill(200));
  });
});
