import { status } from '@grpc/grpc-js';
import { type Skill, SkillCapability } from '@loom/contracts';
import { call, fieldViolationsOf } from '@loom/service-kit';
import { failure } from '@loom/service-kit/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testDatabaseUrl } from '@loom/testing';
import { freshDatabase, type GatewayHarness, startGateway } from './harness.js';

const realDatabaseUrl = testDatabaseUrl('skill-gateway: registry');

const {
  SKILL_CAPABILITY_ENTITY_EXTRACTION: ENTITIES,
  SKILL_CAPABILITY_KEYWORD_EXTRACTION: KEYWORDS,
  SKILL_CAPABILITY_PDF_PARSING: PDF,
  SKILL_CAPABILITY_WEB_DATA_EXTRACTION: WEB,
} = SkillCapability;

const skill = (fields: Partial<Skill>): Skill => ({
  name: 'nlp',
  url: 'http://127.0.0.1:8085/annotate',
  capability: ENTITIES,
  pipeline: 'default',
  version: '',
  ...fields,
});

describe('skill registry (embedded PostgreSQL)', () => {
  let gateway: GatewayHarness;
  beforeAll(async () => {
    gateway = await startGateway();
  });
  afterAll(() => gateway.stop());

  const refused = async (given: Skill) => {
    const error = await failure(call(gateway.client, 'registerSkill', { skill: given, replace: false }));
    expect(error.code).toBe(status.INVALID_ARGUMENT);
    return fieldViolationsOf(error).map((violation) => violation.field);
  };

  it('refuses each rule of each capability, naming the field', async () => {
    expect(await refused(skill({ capability: SkillCapability.SKILL_CAPABILITY_UNSPECIFIED }))).toEqual(['skill.capability']);
    expect(await refused(skill({ name: '' }))).toEqual(['skill.name']);
    expect(await refused(skill({ url: 'localhost:8085/annotate' }))).toEqual(['skill.url']);
    expect(await refused(skill({ url: 'http://127.0.0.1:8085/parse' }))).toEqual(['skill.url']);
    expect(await refused(skill({ pipeline: '' }))).toEqual(['skill.pipeline']);
    expect(await refused(skill({ url: 'http://127.0.0.1:8085/v2/annotate' }))).toEqual(['skill.version']);
    expect(await refused(skill({ version: 'v2' }))).toEqual(['skill.version']);
    expect(await refused(skill({ name: 'kw', capability: KEYWORDS, url: 'http://127.0.0.1:8086/keywords', pipeline: '' }))).toEqual(['skill.url']);
    expect(
      await refused(skill({ name: 'kw', capability: KEYWORDS, url: 'http://127.0.0.1:8086/extractKeywords', pipeline: '', parameters: { damping: 0.85 } })),
    ).toEqual(['skill.parameters.damping']);
    expect(await refused(skill({ name: 'web', capability: WEB, url: '', pipeline: '' }))).toEqual(['skill.url']);
    expect(await refused(skill({ name: 'pdf', capability: PDF, url: 'http://127.0.0.1:8089', pipeline: 'default' }))).toEqual(['skill.pipeline']);
    expect((await call(gateway.client, 'listSkills', {})).skills).toEqual([]);
  });

  it('registers, lists, refuses a second registration of a name unless replacing, and deletes', async () => {
    const parameters = { iterations: 30, damp: 0.85, useDependencies: true };
    await call(gateway.client, 'registerSkill', {
      skill: skill({ name: 'keywords', capability: KEYWORDS, url: 'http://127.0.0.1:8086/extractKeywords', pipeline: '', parameters }),
      replace: false,
    });
    await call(gateway.client, 'registerSkill', {
      skill: skill({ name: 'entities v2', url: 'http://127.0.0.1:8085/v2/annotate', version: 'v2' }),
      replace: false,
    });

    const again = await failure(
      call(gateway.client, 'registerSkill', {
        skill: skill({ name: 'keywords', capability: KEYWORDS, url: 'http://127.0.0.1:8086/extractKeywords', pipeline: '' }),
        replace: false,
      }),
    );
    expect(again.code).toBe(status.ALREADY_EXISTS);
    await call(gateway.client, 'registerSkill', {
      skill: skill({ name: 'keywords', capability: KEYWORDS, url: 'http://127.0.0.1:9086/extractKeywords', pipeline: '' }),
      replace: true,
    });

    const listed = await call(gateway.client, 'listSkills', {});
    expect(listed.skills.map((entry) => [entry.name, entry.capability, entry.url])).toEqual([
      ['entities v2', ENTITIES, 'http://127.0.0.1:8085/v2/annotate'],
      ['keywords', KEYWORDS, 'http://127.0.0.1:9086/extractKeywords'],
    ]);
    expect(listed.skills[0]).toMatchObject({ pipeline: 'default', version: 'v2' });
    const replaced = listed.registrations[1];
    expect(replaced?.updatedAt?.getTime()).toBeGreaterThanOrEqual(replaced?.createdAt?.getTime() ?? Infinity);

    await call(gateway.client, 'deleteSkill', { name: 'keywords' });
    expect((await failure(call(gateway.client, 'deleteSkill', { name: 'keywords' }))).code).toBe(status.NOT_FOUND);
    expect((await call(gateway.client, 'listSkills', {})).skills.map((entry) => entry.name)).toEqual(['entities v2']);
    await call(gateway.client, 'deleteSkill', { name: 'entities v2' });
  });
});

describe.runIf(realDatabaseUrl !== undefined)('skill registry shared by two gateways on the PostgreSQL server', () => {
  let database: Awaited<ReturnType<typeof freshDatabase>>;
  let first: GatewayHarness;
  let second: GatewayHarness;
  beforeAll(async () => {
    database = await freshDatabase(realDatabaseUrl as string, 'loom_skills_test');
    // both migrate at once: the migrations table's lock makes one of them apply the schema
    [first, second] = await Promise.all([
      startGateway([`loom.skills.database.url=${database.url}`, 'loom.skills.registry.cacheMs=0']),
      startGateway([`loom.skills.database.url=${database.url}`, 'loom.skills.registry.cacheMs=0']),
    ]);
  });
  afterAll(async () => {
    await first.stop();
    await second.stop();
    await database.drop();
  });

  it('shows a registration made through one gateway on the other, and a deletion too', async () => {
    await call(first.client, 'registerSkill', { skill: skill({ name: 'shared' }), replace: false });
    expect((await call(second.client, 'listSkills', {})).skills.map((entry) => entry.name)).toEqual(['shared']);
    const twice = await failure(call(second.client, 'registerSkill', { skill: skill({ name: 'shared' }), replace: false }));
    expect(twice.code).toBe(status.ALREADY_EXISTS);
    // CheckSkill resolves the name from the registry: known on the second gateway
    const checked = await call(second.client, 'checkSkill', { name: 'shared' });
    expect(checked.reachable).toBe(false);
    await call(second.client, 'deleteSkill', { name: 'shared' });
    expect((await call(first.client, 'listSkills', {})).skills).toEqual([]);
    expect((await failure(call(first.client, 'checkSkill', { name: 'shared' }))).code).toBe(status.NOT_FOUND);
  });
});

describe('skills registered from the configuration (loom.skills.register.<name>)', () => {
  it('registers them at start with their fields', async () => {
    const annotation = JSON.stringify({ capability: 'ENTITY_EXTRACTION', url: 'http://127.0.0.1:8085/v2/annotate', pipeline: 'default', version: 'v2' });
    const keywords = JSON.stringify({ capability: 'KEYWORD_EXTRACTION', url: 'http://127.0.0.1:8086/extractKeywords', parameters: { iterations: 30 } });
    const gateway = await startGateway([`loom.skills.register.annotation=${annotation}`, `loom.skills.register.keywords=${keywords}`]);
    try {
      const listed = await call(gateway.client, 'listSkills', {});
      expect(listed.skills.map((entry) => [entry.name, entry.capability, entry.url, entry.pipeline, entry.version])).toEqual([
        ['annotation', ENTITIES, 'http://127.0.0.1:8085/v2/annotate', 'default', 'v2'],
        ['keywords', KEYWORDS, 'http://127.0.0.1:8086/extractKeywords', '', ''],
      ]);
      expect(listed.skills[1]?.parameters).toEqual({ iterations: 30 });
    } finally {
      await gateway.stop();
    }
  });

  it('refuses to start on a registration that breaks its capability rules, naming the key and the field', async () => {
    const wrong = JSON.stringify({ capability: 'KEYWORD_EXTRACTION', url: 'http://127.0.0.1:8086/keywords' });
    await expect(startGateway([`loom.skills.register.keywords=${wrong}`])).rejects.toThrow(/^loom\.skills\.register\.keywords: url: /);
  });
});
