import { describe, expect, it } from 'vitest';
import { sampleWorkflow } from '../test/sample-workflow.js';
import { violationsThrownBy } from '../test/violations.js';
import { COMPONENT_KINDS } from './catalog.js';
import { collectSecretSlots, forEachResourceParameter, forEachSecretSlot, isSealed, needsSealing, SEALED_PREFIX, secretReference } from './secret-values.js';

describe('secretReference', () => {
  it.each([
    ['$$NEO4J_PASSWORD', 'NEO4J_PASSWORD'],
    ['$$_x', '_x'],
    ['$$db.password-2', 'db.password-2'],
  ])('%s refers to %s', (value, name) => {
    expect(secretReference(value)).toBe(name);
  });

  it.each([['$NEO4J'], ['$$'], ['$$1abc'], ['$$a b'], [' $$abc'], ['$$abc '], ['x$$abc'], ['$$ä'], [42], [null], [undefined], [{ $$: 'a' }]])(
    '%j is no reference',
    (value) => {
      expect(secretReference(value)).toBeUndefined();
    },
  );
});

describe('isSealed', () => {
  it('is true for a string starting with the sealed prefix', () => {
    expect(SEALED_PREFIX).toBe('###AES-');
    expect(isSealed('###AES-AAECAwQ=')).toBe(true);
    expect(isSealed('###AES-')).toBe(true);
  });

  it.each([['###AES'], ['##AES-x'], [' ###AES-x'], ['$$NEO4J_PASSWORD'], ['plain'], [7], [null], [undefined]])('is false for %j', (value) => {
    expect(isSealed(value)).toBe(false);
  });
});

describe('forEachResourceParameter', () => {
  it('visits resources, workflow resources and component resources with JSON paths', () => {
    const workflow = sampleWorkflow();
    const visited: [string, string, string, unknown][] = [];
    forEachResourceParameter(workflow, (path, resource, name, value) => visited.push([path, resource.name, name, value]));
    expect(visited).toEqual([
      ['resources[0].parameters.host', 'Main graph_aa', 'host', 'localhost'],
      ['resources[0].parameters.password', 'Main graph_aa', 'password', '$$NEO4J_PASSWORD'],
      ['workflowResources[0].parameters.host', 'Helper graph_bb', 'host', 'nlp-graph'],
      ['workflowResources[0].parameters.password', 'Helper graph_bb', 'password', '$$NLP_PASSWORD'],
      ['workflowResources[0].parameters.port', 'Helper graph_bb', 'port', 7688],
      ['components[1].resource.parameters.host', 'Main graph_aa', 'host', 'localhost'],
      ['components[1].resource.parameters.password', 'Main graph_aa', 'password', '###AES-AAAA'],
      ['components[1].resource.parameters["odd key.x"]', 'Main graph_aa', 'odd key.x', 1],
    ]);
  });

  it('passes the resource instance itself, so a caller can find the parameter definition', () => {
    const workflow = sampleWorkflow();
    const passwordTypes: string[] = [];
    forEachResourceParameter(workflow, (_path, resource, name) => {
      const definition = resource.resource.parameters.find((parameter) => parameter.name === name);
      if (definition?.type === 'PASSWORD') passwordTypes.push(name);
    });
    expect(passwordTypes).toEqual(['password', 'password', 'password']);
  });

  it('skips components without a resource, null or absent', () => {
    const workflow = sampleWorkflow();
    workflow.resources = [];
    workflow.workflowResources = [];
    delete workflow.components[1]!.resource;
    const paths: string[] = [];
    forEachResourceParameter(workflow, (path) => paths.push(path));
    expect(paths).toEqual([]);
  });
});

describe('forEachSecretSlot', () => {
  const enricher = (headers: unknown) => {
    const workflow = sampleWorkflow();
    workflow.resources = [];
    workflow.workflowResources = [];
    workflow.components = [
      {
        name: 'Prices_1',
        component: { ...workflow.components[0]!.component, qualifiedName: COMPONENT_KINDS.HTTP_ENRICHER },
        options: [
          { name: 'url', value: 'http://prices/{sku}' },
          { name: 'headers', value: headers },
        ],
        resource: null,
        skill: null,
        skillConfiguration: { inputs: {}, outputs: {} },
      },
    ];
    return workflow;
  };

  it('visits enricher header values, credential headers as sensitive, and writes JSON text back as text', () => {
    const workflow = enricher(JSON.stringify({ Authorization: '$$TOKEN', 'x-api-key': 'k', accept: 'application/json' }));
    const visited: [string, unknown, boolean][] = [];
    forEachSecretSlot(workflow, (slot) => {
      visited.push([slot.path, slot.value, slot.sensitive]);
      if (slot.sensitive) slot.set('###AES-x');
    });
    expect(visited).toEqual([
      ['components[0].options.headers.Authorization', '$$TOKEN', true],
      ['components[0].options.headers["x-api-key"]', 'k', true],
      ['components[0].options.headers.accept', 'application/json', false],
    ]);
    expect(JSON.parse(workflow.components[0]!.options[1]!.value as string)).toEqual({
      Authorization: '###AES-x',
      'x-api-key': '###AES-x',
      accept: 'application/json',
    });
  });

  it('leaves other options and absent headers alone', () => {
    for (const headers of [null, '']) {
      const visited: string[] = [];
      forEachSecretSlot(enricher(headers), (slot) => visited.push(slot.path));
      expect(visited).toEqual([]);
    }
  });

  it('fails closed on headers it cannot read, naming the option, never passing them over', () => {
    for (const headers of ['{"Authorization": "Bearer s3cr3t"', 'not json', '[1]', { Authorization: { nested: 's3cr3t' } }]) {
      const visited: string[] = [];
      const violations = violationsThrownBy(() => forEachSecretSlot(enricher(headers), (slot) => visited.push(slot.path)));
      expect(violations).toEqual([expect.objectContaining({ field: 'components[0].options[1].value', reason: 'UNREADABLE_SECRET_OPTION' })]);
      expect(violations[0]?.description).not.toContain('s3cr3t');
      expect(visited).toEqual([]);
    }
  });

  it('collects the slots to seal and writes an answer back by path after the walk, headers as text staying text', () => {
    const workflow = enricher(JSON.stringify({ Authorization: '$$TOKEN', accept: 'application/json' }));
    const collected = collectSecretSlots(workflow, needsSealing);
    expect(collected.slots).toEqual([{ path: 'components[0].options.headers.Authorization', value: '$$TOKEN', sensitive: true }]);
    collected.apply([{ path: 'components[0].options.headers.Authorization', value: '###AES-y' }], 'secrets service');
    expect(JSON.parse(workflow.components[0]!.options[1]!.value as string)).toEqual({ Authorization: '###AES-y', accept: 'application/json' });
    expect(() => collected.apply([{ path: 'components[0].options.headers.accept', value: 'x' }], 'secrets service')).toThrow(
      /answered 1 secret slots for the 1 it was sent, or in another order/,
    );
    expect(() => collected.apply([], 'secrets service')).toThrow(/answered 0 secret slots for the 1/);
  });
});
