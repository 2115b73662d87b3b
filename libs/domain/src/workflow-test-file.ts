// The `*.test.yaml` file of `loom workflow test` (issue 53): sample messages for a workflow's inlet, the messages expected
// at named components, and the answers of the skills it calls. The zod schema below is the single source of the format:
// the parser validates with it (every violation naming the field and its line) and schema/workflow-test.schema.json is
// generated from it (test/json-schema-files.test.ts), so an editor completes and checks a test file.

import { z } from 'zod';
import { ValidationError } from '@loom/foundation';
import { type LineIndex, lineOf, parseYamlWithLines } from './compact-text.js';
import { doc, jsonObject, jsonValue, publishJsonSchema } from './workflow-schema.js';
import { parseWithSchema } from './zod-violations.js';

const matcher = doc(
  z
    .strictObject({
      exact: doc(jsonObject, { description: 'The whole body, equal to it (every field, no other).' }).optional(),
      subset: doc(jsonObject, {
        description: 'Fields the body must have with these values; other fields may be there. Nested objects are compared the same way, lists item by item.',
      }).optional(),
      regex: doc(z.record(z.string(), z.string()), {
        description: 'Field path (`title`, `_keywords.0.value`) → a regular expression the field must match (a value that is not a string is matched as JSON).',
      }).optional(),
    })
    .superRefine((value, ctx) => {
      if (value.exact === undefined && value.subset === undefined && value.regex === undefined) {
        ctx.addIssue({ code: 'custom', message: 'give exact, subset or regex (or several: all must hold)', params: { reason: 'MISSING_FIELD' } });
      }
      for (const [path, pattern] of Object.entries(value.regex ?? {})) {
        try {
          new RegExp(pattern, 'u');
        } catch (error) {
          ctx.addIssue({
            code: 'custom',
            message: `not a regular expression: ${(error as Error).message}`,
            path: ['regex', path],
            params: { reason: 'INVALID_VALUE' },
          });
        }
      }
    }),
  { description: 'One expected message: exact, subset and regex, each optional, all that are given must hold.' },
);

const skillAnswers = doc(
  z
    .strictObject({
      answer: doc(jsonValue, { description: 'The JSON the skill answers to every message (an annotation, a list of keywords...).' }).optional(),
      answers: doc(z.array(jsonValue).min(1), {
        description: 'The JSON the skill answers to its first, second... message; a message past the last fails the test.',
      }).optional(),
      refusal: doc(z.string().min(1), { description: 'The skill refuses every message with this reason: each fails for good, as on a refusal.' }).optional(),
    })
    .superRefine((value, ctx) => {
      const given = ['answer', 'answers', 'refusal'].filter((key) => (value as Record<string, unknown>)[key] !== undefined);
      if (given.length !== 1) {
        ctx.addIssue({
          code: 'custom',
          message: `give exactly one of answer, answers and refusal${given.length > 1 ? ` (not ${given.join(' and ')})` : ''}`,
          params: { reason: 'INVALID_VALUE' },
        });
      }
    }),
  { description: "A skill component's mocked answers: the skill is not called, its answer is applied as a real one would be." },
);

const testCase = doc(
  z.strictObject({
    name: doc(z.string().trim().min(1), { description: 'What the test shows; unique in the file.' }),
    inlet: doc(z.string().min(1), { description: 'The source the input enters at (its name in the workflow file); default the first source.' }).optional(),
    until: doc(z.string().min(1), { description: 'The last component that runs: what it emits goes no further (dry run --until).' }).optional(),
    max_messages: doc(z.number().int().min(1), {
      description: 'At most this many messages enter and leave each component, the rest dropped (dry run --max-messages).',
    }).optional(),
    input: doc(z.array(jsonObject).min(1), { description: 'The message bodies handed to the inlet, in order.' }),
    skills: doc(z.record(z.string(), skillAnswers), {
      description: 'Mocked answers by skill component name. Every skill component the input reaches needs them: a test calls no skill.',
    }).optional(),
    expect: doc(z.record(z.string(), z.array(matcher)), {
      description:
        'By component name: the messages it emits (a sink: the messages it takes in), in order, exactly that many ([] for none). Components left out are not checked.',
    }),
    errors: doc(z.record(z.string(), z.array(z.string())), {
      description: 'By component name: a regular expression for each message it fails, in order. A failure at a component not named here fails the test.',
    }).optional(),
  }),
  { description: 'One test: input, mocked skills and what is expected.' },
);

/** Shape of a `*.test.yaml` file: the workflow it tests and its tests. */
export const workflowTestFileSchema = z.strictObject({
  workflow: doc(z.string().min(1), {
    description: 'The workflow file, relative to this file; default the file beside it with the same name before .test.yaml (x.workflow.yaml, .yml or .json).',
  }).optional(),
  tests: doc(z.array(testCase).min(1), { description: 'The tests, run in order, each through its own dry run.' }),
});

/** A `*.test.yaml` file, validated. */
export type WorkflowTestFile = z.output<typeof workflowTestFileSchema>;
/** One test of a test file. */
export type WorkflowTestCase = WorkflowTestFile['tests'][number];
/** One expected message of a test. */
export type WorkflowTestMatcher = z.output<typeof matcher>;
/** A skill component's mocked answers in a test. */
export type WorkflowTestSkillAnswers = z.output<typeof skillAnswers>;

/** A test file read: its tests, and the line of each field (`tests[0].expect.Log`) for later errors. */
export interface ReadWorkflowTests {
  readonly file: WorkflowTestFile;
  /** The line of a field, or of the nearest field above it; undefined when the file has none. */
  readonly lineOf: (field: string) => number | undefined;
}

/**
 * Reads a `*.test.yaml` file (YAML, or JSON): a malformed file or one off the format is a ValidationError with every
 * violation, each naming its field and line (`(line 7 of x.test.yaml)`), as compact workflow files are told.
 */
export function readWorkflowTestText(text: string, fileName = ''): ReadWorkflowTests {
  const { value, lines } = parseYamlWithLines(text.startsWith('\uFEFF') ? text.slice(1) : text);
  let file: WorkflowTestFile;
  try {
    file = parseWithSchema(workflowTestFileSchema, value);
    const names = new Map<string, number>();
    file.tests.forEach((test, index) => {
      const earlier = names.get(test.name);
      if (earlier !== undefined)
        throw ValidationError.of(`tests[${index}].name`, `'${test.name}' is the name of tests[${earlier}] too: names are unique`, 'DUPLICATE');
      names.set(test.name, index);
    });
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    throw withLinesOf(error, lines, fileName);
  }
  return { file, lineOf: (field) => lineOf(lines, field) };
}

function withLinesOf(error: ValidationError, lines: LineIndex, fileName: string): ValidationError {
  return new ValidationError(
    error.violations.map((violation) => {
      const line = lineOf(lines, violation.field);
      return line === undefined
        ? violation
        : { ...violation, description: `${violation.description} (line ${line}${fileName === '' ? '' : ` of ${fileName}`})` };
    }),
    { cause: error },
  );
}

/** JSON Schema (draft 2020-12) of a `*.test.yaml` file, as published in schema/workflow-test.schema.json. */
export function workflowTestJsonSchema(): Record<string, unknown> {
  return publishJsonSchema(
    workflowTestFileSchema,
    'workflow-test.schema.json',
    'loom workflow test',
    'A `*.test.yaml` file of `loom workflow test`: input messages for a workflow, the messages expected at its components, mocked skill answers.',
  );
}
