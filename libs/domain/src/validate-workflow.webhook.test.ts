import { describe, expect, it } from 'vitest';
import { instance, workflowOf } from '../test/catalog-workflows.js';
import { violationsThrownBy } from '../test/violations.js';
import { COMPONENT_KINDS } from './catalog.js';
import { collectSecretSlots, needsSealing } from './secret-values.js';
import { validateWorkflow } from './validate-workflow.js';

const HOOK = 'Orders hook_4b1e2c3d-5f6a-4b7c-8d9e-0f1a2b3c4d5e';
const SINK = 'Log_5c2f3d4e-6a7b-4c8d-9e0f-1a2b3c4d5e6f';

function webhookWorkflow(options: Record<string, unknown>) {
  return workflowOf(
    [instance(COMPONENT_KINDS.WEBHOOK, HOOK, { port: 8101, path: '/orders', ...options }), instance(COMPONENT_KINDS.LOGGER, SINK)],
    [[HOOK, SINK]],
  );
}

/** The violations of a webhook workflow as [field, reason, description]. */
function problems(options: Record<string, unknown>): [string, string | undefined, string][] {
  return violationsThrownBy(() => validateWorkflow(webhookWorkflow(options))).map(({ field, reason, description }) => [field, reason, description]);
}

describe('webhook authentication at push', () => {
  it('takes the default (bearer), an explicit none, and hmac with a $$VARIABLE or sealed secret', () => {
    for (const options of [{}, { authentication: 'bearer' }, { authentication: 'none' }, { authentication: 'hmac', secret: '$$ORDERS_HOOK_SECRET' }]) {
      expect(() => validateWorkflow(webhookWorkflow(options))).not.toThrow();
    }
    expect(() => validateWorkflow(webhookWorkflow({ authentication: 'hmac', secret: '###AES-sealed' }))).not.toThrow();
  });

  it('refuses an unknown mode, naming the option and the modes', () => {
    expect(problems({ authentication: 'basic' })).toStrictEqual([
      ['components[0].options[2].value', 'WRONG_TYPE', "option 'authentication' must be one of: bearer, hmac, none"],
    ]);
  });

  it('refuses hmac without a secret, naming the secret option', () => {
    for (const options of [{ authentication: 'hmac' }, { authentication: 'hmac', secret: ' ' }, { authentication: 'hmac', secret: null }]) {
      const found = problems(options);
      expect(found.map(([field, reason]) => [field, reason])).toStrictEqual([['components[0].options', 'MISSING_OPTION']]);
      expect(found[0]?.[2]).toContain("option 'secret' is required when authentication is hmac");
    }
  });

  it('refuses a secret written in clear (never quoting it) and a secret without hmac', () => {
    const inClear = problems({ authentication: 'hmac', secret: 'hunter2-in-clear' });
    expect(inClear.map(([field, reason]) => [field, reason])).toStrictEqual([['components[0].options[3].value', 'INVALID_VALUE']]);
    expect(inClear[0]?.[2]).toContain('$$VARIABLE');
    expect(inClear[0]?.[2]).not.toContain('hunter2');
    expect(problems({ authentication: 'bearer', secret: '$$ORDERS_HOOK_SECRET' })).toStrictEqual([
      ['components[0].options[3].value', 'INVALID_VALUE', "option 'secret' is used only when authentication is hmac"],
    ]);
  });

  it('takes the replay options and refuses a timestamp tolerance under a second, naming the option', () => {
    const signed = { authentication: 'hmac', secret: '$$ORDERS_HOOK_SECRET' };
    expect(() => validateWorkflow(webhookWorkflow({ ...signed, signed_timestamp: false, timestamp_tolerance: 1000 }))).not.toThrow();
    expect(problems({ ...signed, timestamp_tolerance: 999 })).toStrictEqual([
      ['components[0].options[4].value', 'INVALID_VALUE', "option 'timestamp_tolerance' must be at least 1000 (ms)"],
    ]);
    expect(problems({ ...signed, signed_timestamp: 'yes' }).map(([field, reason]) => [field, reason])).toStrictEqual([
      ['components[0].options[4].value', 'WRONG_TYPE'],
    ]);
  });

  it('makes the secret a sensitive slot, sealed at push', () => {
    const workflow = webhookWorkflow({ authentication: 'hmac', secret: '$$ORDERS_HOOK_SECRET' });
    const collected = collectSecretSlots(workflow, needsSealing);
    expect(collected.slots).toStrictEqual([{ path: 'components[0].options.secret', value: '$$ORDERS_HOOK_SECRET', sensitive: true }]);
    collected.apply([{ path: 'components[0].options.secret', value: '###AES-sealed' }], 'secrets service');
    expect(workflow.components[0]?.options.find((option) => option.name === 'secret')?.value).toBe('###AES-sealed');
  });
});
