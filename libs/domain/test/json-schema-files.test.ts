import { readFile, writeFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { compactWorkflowJsonSchema, relationRulesJsonSchema, scheduleJsonSchema, workflowJsonSchema, workflowTestJsonSchema } from '../src/index.js';

// The published schemas are generated from the zod schemas of src/workflow-schema.ts (the compact form's from the
// catalog, src/compact-schema.ts). With
// UPDATE_SCHEMA=1 (`npm run schema -w @loom/domain`) this test writes them instead of comparing.
const REFRESH = 'npm run schema -w @loom/domain   (or, in libs/domain: UPDATE_SCHEMA=1 npx vitest run test/json-schema-files.test.ts)';

const files = [
  { file: 'workflow.schema.json', schema: workflowJsonSchema },
  { file: 'schedule.schema.json', schema: scheduleJsonSchema },
  { file: 'relation-rules.schema.json', schema: relationRulesJsonSchema },
  { file: 'compact-workflow.schema.json', schema: compactWorkflowJsonSchema },
  { file: 'workflow-test.schema.json', schema: workflowTestJsonSchema },
];

describe.each(files)('schema/$file', ({ file, schema }) => {
  const url = new URL(`../schema/${file}`, import.meta.url);
  const expected = `${JSON.stringify(schema(), null, 2)}\n`;

  it('is up to date with the zod schemas', async () => {
    if (process.env['UPDATE_SCHEMA'] === '1') {
      await writeFile(url, expected);
      console.info(`wrote schema/${file}`);
      return;
    }
    const actual = await readFile(url, 'utf8').catch(() => '');
    expect(actual, `schema/${file} is out of date; refresh it with:\n  ${REFRESH}\n`).toBe(expected);
  });

  it('is a draft 2020-12 schema with an $id, a title and descriptions', () => {
    const json = schema();
    expect(json['$schema']).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(json['$id']).toBe(`https://loom.dev/schema/${file}`);
    expect(typeof json['title']).toBe('string');
    expect(typeof json['description']).toBe('string');
    expect(Object.keys(json).slice(0, 4)).toEqual(['$schema', '$id', 'title', 'description']);
  });
});
