import { type Attributes, type Meter } from '@opentelemetry/api';

/** The attribute naming the workflow of a messaging metric. */
export const ATTR_WORKFLOW = 'loom.workflow';

/** Hooks the messaging calls as messages are stored, delivered again and terminated; feed them to metrics. */
export interface MessagingMetrics {
  /** `count` messages were stored in the workflow's stream (duplicates are not counted). */
  stored(workflow: string, count: number): void;
  /** A message was delivered again (after a nak, an ack wait that ran out, or a consumer that went away). */
  redelivered(workflow: string): void;
  /** A message was terminated: it will not be delivered again. */
  terminated(workflow: string): void;
}

/** Hooks that record nothing. */
export const noMessagingMetrics: MessagingMetrics = {
  stored: () => undefined,
  redelivered: () => undefined,
  terminated: () => undefined,
};

/** Reads the messages stored and not yet acknowledged, by workflow (`Messaging.pendingByWorkflow`). */
export type PendingSource = () => Promise<ReadonlyMap<string, number>>;

/**
 * Messaging metrics on `meter`: the counters `loom.messaging.stored`, `.redelivered` and `.terminated` and, when a
 * source is given, the gauge `loom.messaging.pending` read from JetStream at each collection; each by `loom.workflow`.
 */
export function createMessagingMetrics(meter: Meter, pending?: PendingSource): MessagingMetrics {
  const stored = meter.createCounter('loom.messaging.stored', { description: 'Messages stored in a workflow stream (duplicates aside)', unit: '{message}' });
  const redelivered = meter.createCounter('loom.messaging.redelivered', { description: 'Messages delivered again', unit: '{message}' });
  const terminated = meter.createCounter('loom.messaging.terminated', { description: 'Messages terminated, never delivered again', unit: '{message}' });
  if (pending !== undefined) {
    const gauge = meter.createObservableGauge('loom.messaging.pending', {
      description: 'Messages stored in a workflow stream and not yet acknowledged',
      unit: '{message}',
    });
    gauge.addCallback(async (result) => {
      for (const [workflow, count] of await pending()) result.observe(count, { [ATTR_WORKFLOW]: workflow });
    });
  }
  const attributes = new Map<string, Attributes>();
  const of = (workflow: string): Attributes => {
    let found = attributes.get(workflow);
    if (found === undefined) {
      found = Object.freeze({ [ATTR_WORKFLOW]: workflow });
      attributes.set(workflow, found);
    }
    return found;
  };
  return {
    stored: (workflow, count) => stored.add(count, of(workflow)),
    redelivered: (workflow) => redelivered.add(1, of(workflow)),
    terminated: (workflow) => terminated.add(1, of(workflow)),
  };
}
