import { randomUUID } from 'node:crypto';
import { type DryRunComponentOutput, type Message } from '@loom/contracts';
import { findComponentDefinition, instanceNamed, validateWorkflow, ValidationError, type WorkflowConfiguration } from '@loom/domain';
import { type Logger } from '@loom/telemetry';
import { inletFactory } from './components/inlet.js';
import { type ComponentFactory, type LoomMessage, outcome } from './runtime/component.js';
import { WorkflowRun } from './runtime/workflow-run.js';

/** How long a dry run may take to drain its sample messages. */
export const DRY_RUN_DRAIN_MS = 10_000;

/** Passes messages through unchanged: stands in for a component that cannot run without side effects. */
const passThrough: ComponentFactory = {
  kind: 'processor',
  create: () => Promise.resolve({ process: (batch) => Promise.resolve(batch.map((message) => outcome.emit(message))), close: () => Promise.resolve() }),
};

function toProto(message: LoomMessage): Message {
  return { id: message.id, body: message.body, headers: message.headers };
}

/**
 * Runs sample messages through a workflow configuration without side effects: every source
 * becomes a silent inlet, the sample messages enter at `inletName` (the first source when
 * empty), components whose kind supports dry runs run for real (in memory), the others pass
 * messages through and are marked skipped. Answers what each component emitted and its errors.
 */
export async function dryRun(
  workflow: WorkflowConfiguration,
  messages: readonly Message[],
  inletName: string,
  factories: ReadonlyMap<string, ComponentFactory>,
  logger: Logger,
): Promise<DryRunComponentOutput[]> {
  validateWorkflow(workflow);
  const sources = workflow.components.filter((instance) => instance.component.type === 'SOURCE');
  // an inlet may be named plainly, as a compact file names it
  const inlet =
    inletName === ''
      ? sources[0]?.name
      : (instanceNamed(
          inletName,
          sources.map((source) => source.name),
        ) ?? inletName);
  if (inlet === undefined) throw ValidationError.of('inlet', 'the workflow has no source to receive the sample messages', 'MISSING_FIELD');
  if (!sources.some((source) => source.name === inlet)) throw ValidationError.of('inlet', `names no source of the workflow: '${inlet}'`, 'INVALID_VALUE');

  const outputs = new Map<string, DryRunComponentOutput>();
  const dryFactories = new Map<string, ComponentFactory>();
  for (const instance of workflow.components) {
    const kind = instance.component.qualifiedName;
    const supported = findComponentDefinition(kind)?.dryRunSupported === true;
    const isSource = instance.component.type === 'SOURCE';
    outputs.set(instance.name, { component: instance.name, messages: [], errors: [], skipped: !isSource && !supported });
    if (isSource) dryFactories.set(kind, inletFactory);
    else if (supported && factories.has(kind)) dryFactories.set(kind, factories.get(kind) as ComponentFactory);
    else dryFactories.set(kind, passThrough);
  }
  const run = await WorkflowRun.start(workflow, {
    factories: dryFactories,
    logger,
    dryRun: true,
    onOutput: (component, message) => outputs.get(component)?.messages.push(toProto(message)),
    onFailure: (failure, message) => outputs.get(failure.component)?.errors.push(`${message.id}: ${failure.message}`),
  });
  const withdrawal = { signal: AbortSignal.timeout(DRY_RUN_DRAIN_MS) };
  try {
    for (const sample of messages) {
      await run.publish(inlet, { id: sample.id === '' ? randomUUID() : sample.id, body: sample.body ?? {}, headers: { ...sample.headers } }, withdrawal);
    }
  } finally {
    await run.stop(DRY_RUN_DRAIN_MS);
  }
  return [...outputs.values()];
}
