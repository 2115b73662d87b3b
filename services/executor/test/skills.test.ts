import { readFileSync } from 'node:fs';
import { status } from '@grpc/grpc-js';
import { type DryRunComponentOutput, SkillCapability, type WatchRunResponse } from '@loom/contracts';
import { type Annotation, COMPONENT_KINDS, type ComponentInstance, type Skill } from '@loom/domain';
import { workflowToProto } from '@loom/domain/proto';
import { call, fieldViolationsOf } from '@loom/service-kit';
import { failure, type FakeSkill, startFakeSkill } from '@loom/service-kit/testing';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type ExecutorHarness, instance, startExecutor, workflowOf } from './harness.js';

/** Two real sentences of UD English EWT dev with their UNER entities, as a CoreNLP-shaped annotation. */
const fixture = JSON.parse(readFileSync(new URL('../../../libs/domain/test/fixtures/ewt-dev.annotation.json', import.meta.url), 'utf8')) as {
  text: string;
  annotation: Annotation;
};

let harness: ExecutorHarness;
let fake: FakeSkill;

beforeAll(async () => {
  fake = await startFakeSkill(() => ({ status: 200, body: {} }));
  harness = await startExecutor(['loom.skills.retries=0', 'loom.skills.registry.cacheMs=0']);
  await call(harness.skills, 'registerSkill', {
    skill: { name: 'nlp', url: `${fake.origin}/annotate`, capability: SkillCapability.SKILL_CAPABILITY_ENTITY_EXTRACTION, pipeline: 'default', version: '' },
    replace: false,
  });
}, 120_000);

afterAll(async () => {
  await harness.stop();
  await fake.close();
});

beforeEach(() => {
  fake.requests.length = 0;
});

const INLET = 'In_0c6a1f2e-3b4d-4e5f-8a9b-0c1d2e3f4a5b';
const SKILL = 'Skill_1d7b2a3f-4c5e-4f6a-9b0c-1d2e3f4a5b6c';
const KEYWORDS = 'Keywords_2e8c3b4a-5d6f-4a7b-8c1d-2e3f4a5b6c7d';

function skillComponent(kind: string, name: string, skill: Skill, configuration: Partial<ComponentInstance['skillConfiguration']> = {}): ComponentInstance {
  return { ...instance(kind, name), skill, skillConfiguration: { inputs: {}, outputs: {}, ...configuration } };
}

async function dryRun(
  components: ComponentInstance[],
  links: [string, string][],
  bodies: Record<string, unknown>[],
): Promise<Record<string, DryRunComponentOutput>> {
  const workflow = workflowOf(
    'Skills_3f9d4c5b-6e7a-4b8c-9d2e-3f4a5b6c7d8e',
    [instance(COMPONENT_KINDS.INLET, INLET), ...components],
    [[INLET, components[0]?.name ?? ''], ...links],
  );
  const { outputs } = await call(harness.executor, 'dryRun', {
    workflow: workflowToProto(workflow),
    inlet: INLET,
    until: '',
    maxMessages: 0,
    messages: bodies.map((body, i) => ({ id: `m${i}`, body, headers: {} })),
  });
  return Object.fromEntries(outputs.map((output) => [output.component, output]));
}

describe('entity extraction component', () => {
  it('sends {text, pipeline} to /annotate and writes _annotation, merged _entities and _merged_entities; a skill given by name is resolved from the registry', async () => {
    fake.answerWith(() => ({ status: 200, body: fixture.annotation }));
    const outputs = await dryRun([skillComponent(COMPONENT_KINDS.ENTITY_EXTRACTION, SKILL, { name: 'nlp', url: '' })], [], [{ text: fixture.text }]);
    expect(JSON.parse(fake.requests[0]?.body.toString() ?? '')).toEqual({ text: fixture.text, pipeline: 'default' });
    const body = outputs[SKILL]?.messages[0]?.body ?? {};
    expect(body._annotation).toEqual(fixture.annotation);
    expect(body._entities).toEqual({ person: ['Ben Goodger', 'Jim Lobe'], organization: ['Mozilla Firefox'], location: ['Fallujah', 'Iraq', 'Washington'] });
    expect((body._merged_entities as Record<string, unknown[]>).PERSON?.[1]).toEqual({
      sentenceIndex: 1,
      beginCharacter: 54,
      endCharacter: 62,
      label: 'PERSON',
      value: 'Jim Lobe',
    });
  });

  it('sends the pipeline the workflow chooses for a skill it names only, with the registered url', async () => {
    fake.answerWith(() => ({ status: 200, body: fixture.annotation }));
    await dryRun([skillComponent(COMPONENT_KINDS.ENTITY_EXTRACTION, SKILL, { name: 'nlp', url: '', pipeline: 'technology' })], [], [{ text: fixture.text }]);
    expect(fake.requests[0]?.path).toBe('/annotate');
    expect(JSON.parse(fake.requests[0]?.body.toString() ?? '')).toEqual({ text: fixture.text, pipeline: 'technology' });
  });

  it('keeps tokens apart in _entities from /v2/annotate (a skill written in full in the workflow), still merging _merged_entities; outputs map to named fields', async () => {
    fake.answerWith(() => ({ status: 200, body: fixture.annotation }));
    const v2: Skill = { name: 'nlp-v2', url: `${fake.origin}/v2/annotate`, pipeline: 'tech', version: 'v2' };
    const outputs = await dryRun(
      [skillComponent(COMPONENT_KINDS.ENTITY_EXTRACTION, SKILL, v2, { inputs: { text: 'content' }, outputs: { annotation: null, entities: 'found' } })],
      [],
      [{ content: fixture.text }],
    );
    expect(fake.requests[0]?.path).toBe('/v2/annotate');
    const body = outputs[SKILL]?.messages[0]?.body ?? {};
    expect(body).not.toHaveProperty('_annotation');
    expect(body.found).toEqual({
      person: ['Ben', 'Goodger', 'Jim', 'Lobe'],
      organization: ['Mozilla', 'Firefox'],
      location: ['Fallujah', 'Iraq', 'Washington'],
    });
    expect((body._merged_entities as Record<string, { value: string }[]>).ORGANIZATION?.map((mention) => mention.value)).toEqual(['Mozilla Firefox']);
  });

  it('fails a message without the text field, naming it, and a message the skill refuses, with the skill’s message; the others go on', async () => {
    fake.answerWith((request) => {
      const { text } = JSON.parse(request.body.toString()) as { text: string };
      return text === 'refuse me'
        ? { status: 400, body: { error: 'BAD_REQUEST', message: 'text is too long', field: 'text' } }
        : { status: 200, body: fixture.annotation };
    });
    const outputs = await dryRun(
      [skillComponent(COMPONENT_KINDS.ENTITY_EXTRACTION, SKILL, { name: 'nlp', url: '' })],
      [],
      [{ title: 'no text' }, { text: 'refuse me' }, { text: fixture.text }],
    );
    expect(outputs[SKILL]?.messages.map((message) => message.id)).toEqual(['m2']);
    expect(outputs[SKILL]?.errors).toEqual([
      expect.stringMatching(/^m0: the message has no field 'text'/),
      expect.stringMatching(/^m1: skill 'nlp' refused the request: HTTP 400: text is too long \(field text\)/),
    ]);
  });

  it('fails a message with the kind and retryable flag the skill gateway gave its failure: a refusal for good, a 5xx retried', async () => {
    fake.answerWith((request) => {
      const { text } = JSON.parse(request.body.toString()) as { text: string };
      return text === 'refuse me'
        ? { status: 400, body: { error: 'BAD_REQUEST', message: 'text is too long' } }
        : { status: 503, body: { error: 'overloaded' } };
    });
    const workflow = workflowOf(
      'Typed skill failures_4a0e5d6c-7f8b-4c9d-8e3f-4a5b6c7d8e9f',
      [
        instance(COMPONENT_KINDS.INLET, INLET),
        { ...instance(COMPONENT_KINDS.ENTITY_EXTRACTION, SKILL, { max_retry: 1, delay: 0 }), skill: { name: 'nlp', url: '' } },
      ],
      [[INLET, SKILL]],
    );
    const put = await call(harness.store, 'putWorkflow', { workflow: workflowToProto(workflow) });
    const name = put.summary?.name ?? '';
    await call(harness.executor, 'startWorkflow', { name });
    const stream = harness.executor.watchRun({ name });
    const failures: WatchRunResponse['failure'][] = [];
    stream.on('data', (event: WatchRunResponse) => {
      if (event.component === SKILL) failures.push(event.failure);
    });
    const ended = new Promise((resolve, reject) => stream.on('end', resolve).on('error', reject));
    // one at a time, so the failures come in this order
    for (const [index, text] of ['refuse me', 'busy'].entries()) {
      await call(harness.executor, 'publishMessage', { workflowName: name, inlet: INLET, body: { text }, headers: {}, messageId: `m${index}` });
      await expect.poll(() => failures.length, { timeout: 30_000 }).toBe(index + 1);
    }
    await call(harness.executor, 'stopWorkflow', { name });
    await ended;
    expect(failures).toEqual([
      {
        kind: 'invalid-argument',
        retryable: false,
        message: "skill 'nlp' refused the request: HTTP 400: text is too long",
        cause: 'SkillCallError: HTTP 400: text is too long',
      },
      {
        kind: 'unavailable',
        retryable: true,
        message: "skill 'nlp' is unavailable after 1 attempt: HTTP 503: overloaded",
        cause: 'SkillCallError: HTTP 503: overloaded',
      },
    ]);
    // the refusal was sent once; the unavailable message once more by the component's max_retry
    expect(fake.requests.filter((request) => request.method === 'POST')).toHaveLength(3);
  });
});

describe('keyword extraction component', () => {
  it('sends the annotation with the skill’s parameters after entity extraction and writes _keywords', async () => {
    fake.answerWith((request) =>
      request.path === '/extractKeywords' ? { status: 200, body: [{ value: 'lead engineer', relevance: 0.9 }] } : { status: 200, body: fixture.annotation },
    );
    const keywordSkill: Skill = { name: 'kw', url: `${fake.origin}/extractKeywords`, parameters: { iterations: 30, damp: 0.85 } };
    const outputs = await dryRun(
      [
        skillComponent(COMPONENT_KINDS.ENTITY_EXTRACTION, SKILL, { name: 'nlp', url: '' }),
        skillComponent(COMPONENT_KINDS.KEYWORD_EXTRACTION, KEYWORDS, keywordSkill, { inputs: { annotatedText: '_annotation' } }),
      ],
      [[SKILL, KEYWORDS]],
      [{ text: fixture.text }],
    );
    const sent = JSON.parse(fake.requests.find((request) => request.path === '/extractKeywords')?.body.toString() ?? '') as Record<string, unknown>;
    expect(sent).toEqual({ iterations: 30, damp: 0.85, annotatedText: fixture.annotation });
    expect(outputs[KEYWORDS]?.messages[0]?.body?._keywords).toEqual([{ value: 'lead engineer', relevance: 0.9 }]);
  });

  it('sends the annotation skill’s own JSON on, as it answered it, without writing the annotation again', async () => {
    // written with spaces and line breaks, which JSON.stringify would not write: only the skill's own bytes have them
    const answered = JSON.stringify(fixture.annotation, null, 1);
    fake.answerWith((request) => (request.path === '/extractKeywords' ? { status: 200, body: [] } : { status: 200, text: answered }));
    const keywordSkill: Skill = { name: 'kw', url: `${fake.origin}/extractKeywords`, parameters: { iterations: 30, damp: 0.85 } };
    const outputs = await dryRun(
      [
        skillComponent(COMPONENT_KINDS.ENTITY_EXTRACTION, SKILL, { name: 'nlp', url: '' }),
        skillComponent(COMPONENT_KINDS.KEYWORD_EXTRACTION, KEYWORDS, keywordSkill, { inputs: { annotatedText: '_annotation' } }),
      ],
      [[SKILL, KEYWORDS]],
      [{ text: fixture.text }],
    );
    const sent = fake.requests.find((request) => request.path === '/extractKeywords')?.body.toString();
    expect(sent).toBe(`{"iterations":30,"damp":0.85,"annotatedText":${answered}}`);
    expect(outputs[KEYWORDS]?.messages[0]?.body?._annotation).toEqual(fixture.annotation);
  });

  it('is refused at push without an entity extraction component upstream, naming the component', async () => {
    const keywords = skillComponent(
      COMPONENT_KINDS.KEYWORD_EXTRACTION,
      KEYWORDS,
      { name: 'kw', url: `${fake.origin}/extractKeywords` },
      { inputs: { annotatedText: '_annotation' } },
    );
    const workflow = workflowOf(
      'Lonely keywords_4a0e5d6c-7f8b-4c9d-8e3f-4a5b6c7d8e9f',
      [instance(COMPONENT_KINDS.INLET, INLET), keywords],
      [[INLET, KEYWORDS]],
    );
    const refused = await failure(call(harness.store, 'putWorkflow', { workflow: workflowToProto(workflow) }));
    expect(refused.code).toBe(status.INVALID_ARGUMENT);
    expect(fieldViolationsOf(refused)).toEqual([
      expect.objectContaining({ field: 'components[1]', reason: 'MISSING_UPSTREAM', description: expect.stringContaining(KEYWORDS) }),
    ]);
  });

  it('is refused at push with a skill of another capability, naming the field', async () => {
    const keywords = skillComponent(
      COMPONENT_KINDS.KEYWORD_EXTRACTION,
      KEYWORDS,
      { name: 'nlp', url: `${fake.origin}/annotate`, pipeline: 'default' },
      { inputs: { annotatedText: 'a' } },
    );
    const entities = skillComponent(COMPONENT_KINDS.ENTITY_EXTRACTION, SKILL, { name: 'nlp', url: '' });
    const workflow = workflowOf(
      'Wrong skill_5b1f6e7d-8a9c-4d0e-9f4a-5b6c7d8e9f0a',
      [instance(COMPONENT_KINDS.INLET, INLET), entities, keywords],
      [
        [INLET, SKILL],
        [SKILL, KEYWORDS],
      ],
    );
    const refused = await failure(call(harness.store, 'putWorkflow', { workflow: workflowToProto(workflow) }));
    expect(fieldViolationsOf(refused).map((violation) => violation.field)).toEqual(['components[2].skill.url', 'components[2].skill.pipeline']);
  });
});

describe('web data and PDF components', () => {
  it('posts {url} and writes the parsed data, publish_date without offset', async () => {
    fake.answerWith(() => ({
      status: 200,
      body: {
        data: { top_image: 'http://x/a.png', movies: [], text: 'Body', keywords: ['graph'], authors: ['Ada'], publish_date: '2024-05-01T09:30:00+02:00' },
      },
    }));
    const web: Skill = { name: 'web', url: `${fake.origin}/extract` };
    const outputs = await dryRun(
      [skillComponent(COMPONENT_KINDS.WEB_DATA_EXTRACTION, SKILL, web, { inputs: { url: 'link' }, outputs: { data: 'page' } })],
      [],
      [{ link: 'https://example.org/a' }],
    );
    expect(JSON.parse(fake.requests[0]?.body.toString() ?? '')).toEqual({ url: 'https://example.org/a' });
    expect(outputs[SKILL]?.messages[0]?.body?.page).toEqual({
      top_image: 'http://x/a.png',
      movies: [],
      text: 'Body',
      keywords: ['graph'],
      authors: ['Ada'],
      publish_date: '2024-05-01T07:30:00',
    });
  });

  it('sends base64 PDF bytes as application/pdf, or {url}, and writes the text and pages', async () => {
    fake.answerWith(() => ({ status: 200, body: { text: 'Page one', pages: [{ number: 1, text: 'Page one' }], metadata: {} } }));
    const pdf: Skill = { name: 'pdf', url: `${fake.origin}/parse` };
    const bytes = Buffer.from('%PDF-1.4 fake');
    const outputs = await dryRun(
      [skillComponent(COMPONENT_KINDS.PDF_PARSING, SKILL, pdf)],
      [],
      [{ pdf: bytes.toString('base64') }, { pdf: 'https://example.org/a.pdf' }],
    );
    expect(fake.requests[0]?.headers['content-type']).toBe('application/pdf');
    expect(fake.requests[0]?.body.equals(bytes)).toBe(true);
    expect(JSON.parse(fake.requests[1]?.body.toString() ?? '')).toEqual({ url: 'https://example.org/a.pdf' });
    expect(outputs[SKILL]?.messages[0]?.body).toMatchObject({ _text: 'Page one', _pages: [{ number: 1, text: 'Page one' }] });
  });
});
