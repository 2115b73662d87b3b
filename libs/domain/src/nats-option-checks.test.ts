import { describe, expect, it } from 'vitest';
import { instance, workflowOf } from '../test/catalog-workflows.js';
import { violationsThrownBy } from '../test/violations.js';
import { COMPONENT_KINDS } from './catalog.js';
import { validateWorkflow } from './validate-workflow.js';

const SUBSCRIBER = 'Orders in_1b2c3d4e-5f6a-4b7c-8d9e-0f1a2b3c4d5e';
const PUBLISHER = 'Orders out_2c3d4e5f-6a7b-4c8d-9e0f-1a2b3c4d5e6f';

/** The violations, as [field, description], of a workflow NATS Subscriber → NATS Publisher with these options. */
function violations(subscriber: Record<string, unknown>, publisher: Record<string, unknown> = { subject: 'copies.{region}' }): [string, string][] {
  const workflow = workflowOf(
    [instance(COMPONENT_KINDS.NATS_SUBSCRIBER, SUBSCRIBER, subscriber), instance(COMPONENT_KINDS.NATS_PUBLISHER, PUBLISHER, publisher)],
    [[SUBSCRIBER, PUBLISHER]],
  );
  try {
    validateWorkflow(workflow);
    return [];
  } catch {
    return violationsThrownBy(() => validateWorkflow(workflow)).map(({ field, description }) => [field, description]);
  }
}

describe('the NATS connectors at push', () => {
  it('accepts a core subject with a queue group, a stream with a durable consumer, and secrets as $$VARIABLEs', () => {
    expect(violations({ subject: 'orders.*.created', queue_group: 'loom', token: '$$NATS_TOKEN' })).toEqual([]);
    expect(
      violations(
        { subject: 'orders.>', stream: 'ORDERS', durable_name: 'loom-orders', deliver_policy: 'new', credentials: '$$NATS_CREDS' },
        { subject: 'copies.{region}.{ id }', jetstream: true, tls_cert: 'PEM', tls_key: '###AES-AQAFbG9vbTEAAAAA' },
      ),
    ).toEqual([]);
  });

  it('refuses bad options, each naming its field', () => {
    expect(
      violations(
        {
          servers: 'http://nats:4222',
          subject: 'orders..new',
          stream: 'ORDERS',
          queue_group: 'loom',
          deliver_policy: 'oldest',
          non_json: 'drop',
          token: 'plain-token',
          max_deliver: 0,
        },
        { subject: 'copies.>', tls_key: '$$NATS_KEY' },
      ),
    ).toEqual([
      ['components[0].options[0].value', "option 'servers' must be comma-separated nats:// or tls:// URLs"],
      ['components[0].options[1].value', "option 'subject' must be a NATS subject: dot-separated tokens, * for one token, > last for the rest"],
      ['components[0].options[4].value', "option 'deliver_policy' must be one of: all, new, last, last_per_subject"],
      ['components[0].options[5].value', "option 'non_json' must be one of: wrap, refuse"],
      ['components[0].options[6].value', "option 'token' must be a $$VARIABLE naming the variable that holds it, not the secret itself"],
      ['components[0].options[3].value', "option 'queue_group' is for a core subject: a stream's durable consumer is shared already"],
      ['components[0].options[7].value', "option 'max_deliver' must be at least 1"],
      ['components[1].options[0].value', "option 'subject' must be a NATS subject without wildcards: dot-separated tokens, each may hold {field} placeholders"],
      ['components[1].options[1].value', "options 'tls_cert' and 'tls_key' go together: give both or neither"],
    ]);
    expect(violations({ subject: 'orders', durable_name: 'loom' })).toEqual([
      ['components[0].options[1].value', "option 'durable_name' needs option 'stream'"],
    ]);
  });
});
