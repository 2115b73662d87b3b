import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '@loom/foundation';
import { instance, neo4j, workflowOf } from '../test/catalog-workflows.js';
import { violationsThrownBy } from '../test/violations.js';
import { COMPONENT_KINDS } from './catalog.js';
import { validateWorkflow } from './validate-workflow.js';
import type { ComponentInstance, WorkflowConfiguration } from './workflow.js';
import { readWorkflowText } from './compact-text.js';

const examples = new URL('../../../examples/', import.meta.url);
const exampleFiles = readdirSync(examples).filter((file) => /\.workflow\.(json|yaml)$/.test(file));

const inlet = (name = 'Articles'): ComponentInstance => instance(COMPONENT_KINDS.INLET, name);
const enricher = (name: string, options: Record<string, unknown> = {}): ComponentInstance =>
  instance(COMPONENT_KINDS.HTTP_ENRICHER, name, { url: 'http://prices.example/{sku}', ...options });
const logger = (name: string): ComponentInstance => instance(COMPONENT_KINDS.LOGGER, name);
const tokens = (name = 'Tokens'): ComponentInstance => instance(COMPONENT_KINDS.TOKEN_OCCURRENCE_WRITER, name, {}, { resource: neo4j() });
const worksFor = {
  name: 'works-for',
  relation: 'WORKS_FOR',
  subject: { entity: ['PERSON'] },
  path: [{ relation: 'nsubj', direction: 'up' }],
  object: { entity: ['ORGANIZATION'] },
};
const relations = (name = 'Relations', options: Record<string, unknown> = {}): ComponentInstance =>
  instance(COMPONENT_KINDS.RULE_BASED_RELATION_EXTRACTION, name, { rules: { rules: [worksFor] }, ...options }, { resource: neo4j() });

/** The violations of a workflow, whole. */
function violationsOf(workflow: WorkflowConfiguration): { field: string; reason?: string; description: string }[] {
  return violationsThrownBy(() => validateWorkflow(workflow)).map(({ field, reason, description }) => ({ field, reason, description }));
}

describe('the shipped examples', () => {
  it('are all there', () => {
    expect(exampleFiles.length).toBeGreaterThanOrEqual(5);
  });

  it.each(exampleFiles)('%s passes every check a push makes', (file) => {
    const { workflow } = readWorkflowText(readFileSync(new URL(file, examples), 'utf8'), file);
    expect(() => validateWorkflow(workflow)).not.toThrow();
  });
});

describe('links checked at push', () => {
  it('refuses a JSON producer linked straight into Rule Based Relation Extraction: the types differ and no Token Occurrence Writer is upstream', () => {
    const workflow = workflowOf(
      [inlet(), enricher('Enrich'), relations()],
      [
        ['Articles', 'Enrich'],
        ['Enrich', 'Relations'],
      ],
    );
    expect(violationsOf(workflow)).toStrictEqual([
      {
        field: 'links[1]',
        reason: 'INCOMPATIBLE_LINK',
        description:
          '(Enrich -> Relations) joins message types that do not fit: HTTP Enricher sends loom.messages.JsonMessage, Rule Based Relation Extraction takes loom.messages.NodeIdMessage',
      },
      {
        field: 'components[2]',
        reason: 'MISSING_UPSTREAM',
        description:
          'Relations: a Rule Based Relation Extraction needs the message field node_id, which a Token Occurrence Writer adds: link it downstream of one',
      },
    ]);
  });

  it('accepts Rule Based Relation Extraction after a Token Occurrence Writer, whose node id messages a logger downstream takes too', () => {
    const workflow = workflowOf(
      [inlet(), tokens(), relations(), logger('Log'), logger('Tokens log')],
      [
        ['Articles', 'Tokens'],
        ['Tokens', 'Relations'],
        ['Relations', 'Log'],
        ['Tokens', 'Tokens log'],
      ],
    );
    expect(() => validateWorkflow(workflow)).not.toThrow();
  });

  it('refuses a sink linked into a source, naming the link and both rules', () => {
    const workflow = workflowOf(
      [inlet(), logger('Log'), instance(COMPONENT_KINDS.TIMER, 'Tick')],
      [
        ['Articles', 'Log'],
        ['Log', 'Tick'],
      ],
    );
    expect(violationsOf(workflow)).toStrictEqual([
      { field: 'links[1]', reason: 'LINK_INTO_SOURCE', description: '(Log -> Tick) links into Tick, a Timer: a source takes no messages from links' },
      { field: 'links[1]', reason: 'LINK_OUT_OF_SINK', description: '(Log -> Tick) links out of Log, a Logger: a sink sends no messages on' },
    ]);
  });

  it('refuses a cycle, naming the link that closes it and the cycle', () => {
    const workflow = workflowOf(
      [inlet(), enricher('Parse'), enricher('Check'), enricher('Write'), logger('Log')],
      [
        ['Articles', 'Parse'],
        ['Parse', 'Check'],
        ['Check', 'Write'],
        ['Write', 'Parse'],
        ['Write', 'Log'],
      ],
    );
    expect(violationsOf(workflow)).toStrictEqual([
      { field: 'links[3]', reason: 'LINK_CYCLE', description: '(Write -> Parse) closes a cycle: Parse -> Check -> Write -> Parse' },
    ]);
  });

  it('refuses a failure handler that takes no failure messages: a source, or a kind that takes node ids', () => {
    const workflow = workflowOf(
      [
        inlet(),
        enricher('Enrich', { failure_handler: 'Other inlet' }),
        inlet('Other inlet'),
        tokens(),
        relations('Relations', { failure_handler: 'Relations 2' }),
        relations('Relations 2'),
      ],
      [
        ['Articles', 'Enrich'],
        ['Enrich', 'Tokens'],
        ['Tokens', 'Relations'],
        ['Tokens', 'Relations 2'],
      ],
    );
    expect(violationsOf(workflow)).toStrictEqual([
      {
        field: 'components[1].options[1].value',
        reason: 'FAILURE_HANDLER_TAKES_NO_FAILURES',
        description: 'Enrich: its failure handler Other inlet, an Inlet, takes loom.messages.None, not failure messages (loom.messages.FailureMessage)',
      },
      {
        field: 'components[4].options[1].value',
        reason: 'FAILURE_HANDLER_TAKES_NO_FAILURES',
        description:
          'Relations: its failure handler Relations 2, a Rule Based Relation Extraction, takes loom.messages.NodeIdMessage, not failure messages (loom.messages.FailureMessage)',
      },
    ]);
  });

  it('refuses a component no source reaches, by links or as a failure handler', () => {
    const workflow = workflowOf(
      [inlet(), enricher('Enrich', { failure_handler: 'Failures' }), logger('Failures'), enricher('Orphan'), logger('Orphan log')],
      [
        ['Articles', 'Enrich'],
        ['Orphan', 'Orphan log'],
      ],
    );
    expect(violationsOf(workflow)).toStrictEqual([
      {
        field: 'components[3]',
        reason: 'UNREACHABLE_COMPONENT',
        description: 'Orphan is reached from no source: link it downstream of a source, or name it as a failure handler of a component that is',
      },
      {
        field: 'components[4]',
        reason: 'UNREACHABLE_COMPONENT',
        description: 'Orphan log is reached from no source: link it downstream of a source, or name it as a failure handler of a component that is',
      },
    ]);
  });

  it('needs a Token Occurrence Writer upstream of Rule Based Relation Extraction, however far, but not beside it', () => {
    const upstream = workflowOf(
      [inlet(), tokens(), relations()],
      [
        ['Articles', 'Tokens'],
        ['Tokens', 'Relations'],
      ],
    );
    expect(() => validateWorkflow(upstream)).not.toThrow();
    const beside = workflowOf(
      [inlet(), tokens(), relations(), logger('Log')],
      [
        ['Articles', 'Tokens'],
        ['Tokens', 'Log'],
        ['Relations', 'Log'],
      ],
    );
    expect(violationsOf(beside).map(({ field, reason }) => [field, reason])).toStrictEqual([
      ['components[2]', 'UNREACHABLE_COMPONENT'],
      ['components[2]', 'MISSING_UPSTREAM'],
    ]);
  });

  it("names the link and the rule in the error's message, as the CLI prints it", () => {
    const workflow = workflowOf(
      [inlet(), enricher('parse'), enricher('check'), logger('write'), tokens('tokens')],
      [
        ['Articles', 'parse'],
        ['parse', 'check'],
        ['check', 'tokens'],
        ['write', 'tokens'],
      ],
    );
    let thrown: unknown;
    try {
      validateWorkflow(workflow);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ValidationError);
    expect((thrown as ValidationError).message).toMatch(/^links\[3\]: \(write -> tokens\) links out of write, a Logger/);
  });
});
