// The checks of a NATS connector's options that span several options or need a secret's form (validate-workflow.ts
// reports them at push); each names the JSON path of the option it is about.

import { appendJsonPath } from '@loom/foundation';
import { COMPONENT_KINDS } from './catalog.js';
import { NATS_SECRET_OPTIONS } from './nats-catalog.js';
import { isSealed, secretReference } from './secret-values.js';
import type { ComponentInstance } from './workflow.js';

/** One problem with a NATS connector's options. */
export interface NatsOptionViolation {
  readonly field: string;
  readonly description: string;
  readonly reason: 'INVALID_VALUE';
}

const POSITIVE_INTEGERS = ['ack_wait', 'max_deliver', 'max_ack_pending'] as const;

/**
 * The violations of a NATS Subscriber's or NATS Publisher's options (none for other kinds): a secret in clear (it must
 * be a $$VARIABLE, sealed at push), a TLS certificate without its key or the reverse, a queue group with a stream, a
 * durable name without one, a JetStream limit below 1.
 */
export function natsOptionViolations(component: ComponentInstance, optionsPath: string): NatsOptionViolation[] {
  const kind = component.component.qualifiedName;
  if (kind !== COMPONENT_KINDS.NATS_SUBSCRIBER && kind !== COMPONENT_KINDS.NATS_PUBLISHER) return [];
  const violations: NatsOptionViolation[] = [];
  const given = new Map<string, { value: unknown; path: string }>();
  component.options.forEach((option, index) => {
    if (option.value !== null && option.value !== undefined && option.value !== '') {
      given.set(option.name, { value: option.value, path: appendJsonPath(appendJsonPath(optionsPath, index), 'value') });
    }
  });
  const report = (field: string, description: string): void => void violations.push({ field, description, reason: 'INVALID_VALUE' });
  for (const name of NATS_SECRET_OPTIONS) {
    const secret = given.get(name);
    if (secret !== undefined && secretReference(secret.value) === undefined && !isSealed(secret.value)) {
      report(secret.path, `option '${name}' must be a $$VARIABLE naming the variable that holds it, not the secret itself`);
    }
  }
  const certificate = given.get('tls_cert');
  const key = given.get('tls_key');
  if ((certificate === undefined) !== (key === undefined)) {
    report((certificate ?? key)!.path, "options 'tls_cert' and 'tls_key' go together: give both or neither");
  }
  if (kind === COMPONENT_KINDS.NATS_SUBSCRIBER) {
    const stream = given.get('stream');
    const queue = given.get('queue_group');
    const durable = given.get('durable_name');
    if (stream !== undefined && queue !== undefined)
      report(queue.path, "option 'queue_group' is for a core subject: a stream's durable consumer is shared already");
    if (stream === undefined && durable !== undefined) report(durable.path, "option 'durable_name' needs option 'stream'");
    for (const name of POSITIVE_INTEGERS) {
      const limit = given.get(name);
      if (limit !== undefined && typeof limit.value === 'number' && limit.value < 1) report(limit.path, `option '${name}' must be at least 1`);
    }
  }
  return violations;
}
