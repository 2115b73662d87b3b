import { randomUUID } from 'node:crypto';
import { type DryRunComponentOutput, type Message } from '@loom/contracts';
import { findComponentDefinition, instanceNamed, validateWorkflow, ValidationError, type WorkflowConfiguration } from '@loom/domain';
import { type Logger } from '@loom/telemetry';
import { inletFactory } from './components/inlet.js';
import { type ComponentFactory, type LoomMessage, type Outcome, outcome, type Processor } from './runtime/component.js';
import { WorkflowRun } from './runtime/workflow-run.js';

/** How long a dry run may take to drain its sample messages. */
export const DRY_RUN_DRAIN_MS = 10_000;

/** Where a dry run's sample messages enter, how far they go and what stands in for components. */
export interface DryRunScope {
  /** The source that takes the sample messages (instance or plain name); the first source when empty. */
  readonly inlet: string;
  /** The last component that runs (instance or plain name): its outputs go no further. Empty or absent: the whole workflow. */
  readonly until?: string;
  /** At most this many messages enter at the inlet and leave each component, the rest dropped; 0 or absent: no cap. */
  readonly maxMessages?: number;
  /** Processors that stand in for components, by instance name (a workflow test's mocked skill answers); they run, never skipped. */
  readonly replacements?: ReadonlyMap<string, ComponentFactory>;
}

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
 * becomes a silent inlet, the sample messages enter at the scope's inlet (the first source when
 * empty), components whose kind supports dry runs run for real (in memory), replacements run in
 * place of the components they name, the others pass messages through and are marked skipped.
 * Answers what each component took in, emitted and failed; `until` and `maxMessages` bound the run.
 */
export async function dryRun(
  workflow: WorkflowConfiguration,
  messages: readonly Message[],
  scope: DryRunScope,
  factories: ReadonlyMap<string, ComponentFactory>,
  logger: Logger,
): Promise<DryRunComponentOutput[]> {
  validateWorkflow(workflow);
  const sources = workflow.components.filter((instance) => instance.component.type === 'SOURCE');
  const names = workflow.components.map((instance) => instance.name);
  // an inlet may be named plainly, as a compact file names it
  const inlet =
    scope.inlet === ''
      ? sources[0]?.name
      : (instanceNamed(
          scope.inlet,
          sources.map((source) => source.name),
        ) ?? scope.inlet);
  if (inlet === undefined) throw ValidationError.of('inlet', 'the workflow has no source to receive the sample messages', 'MISSING_FIELD');
  if (!sources.some((source) => source.name === inlet)) throw ValidationError.of('inlet', `names no source of the workflow: '${inlet}'`, 'INVALID_VALUE');
  const until = untilOf(
    scope.until ?? '',
    names,
    sources.map((source) => source.name),
  );
  const maxMessages = scope.maxMessages ?? 0;
  if (!Number.isSafeInteger(maxMessages) || maxMessages < 0) throw ValidationError.of('max_messages', 'must be a whole number, 0 or more', 'INVALID_VALUE');
  const replacements = scope.replacements ?? new Map<string, ComponentFactory>();
  for (const name of replacements.keys()) {
    if (!names.includes(name)) throw ValidationError.of('replacements', `names no component of the workflow: '${name}'`, 'INVALID_VALUE');
  }

  const outputs = new Map<string, DryRunComponentOutput>();
  const byKind = new Map<string, Map<string, ComponentFactory>>();
  for (const instance of workflow.components) {
    const kind = instance.component.qualifiedName;
    const supported = findComponentDefinition(kind)?.dryRunSupported === true;
    const isSource = instance.component.type === 'SOURCE';
    const chosen = isSource ? inletFactory : (replacements.get(instance.name) ?? (supported ? factories.get(kind) : undefined) ?? passThrough);
    // a kind this process cannot build (a skill without a gateway) passes messages through like one without dry runs
    outputs.set(instance.name, { component: instance.name, messages: [], errors: [], skipped: chosen === passThrough, received: [], truncated: false });
    const instances = byKind.get(kind) ?? new Map<string, ComponentFactory>();
    instances.set(instance.name, chosen);
    byKind.set(kind, instances);
  }
  const recorder = new DryRunRecorder(outputs, until, maxMessages);
  const dryFactories = new Map<string, ComponentFactory>([...byKind].map(([kind, instances]) => [kind, byInstance(instances, recorder)]));
  const run = await WorkflowRun.start(workflow, {
    factories: dryFactories,
    logger,
    dryRun: true,
    onOutput: (component, message) => recorder.emitted(component, message),
    onFailure: (failure, message) => outputs.get(failure.component)?.errors.push(`${message.id}: ${failure.message}`),
  });
  const withdrawal = { signal: AbortSignal.timeout(DRY_RUN_DRAIN_MS) };
  const admitted = maxMessages === 0 ? messages : messages.slice(0, maxMessages);
  if (admitted.length < messages.length) (outputs.get(inlet) as DryRunComponentOutput).truncated = true;
  try {
    for (const sample of admitted) {
      await run.publish(inlet, { id: sample.id === '' ? randomUUID() : sample.id, body: sample.body ?? {}, headers: { ...sample.headers } }, withdrawal);
    }
  } finally {
    await run.stop(DRY_RUN_DRAIN_MS);
  }
  return [...outputs.values()];
}

/** The instance `until` names, checked: a component of the workflow that is not a source; undefined when empty. */
function untilOf(given: string, names: readonly string[], sources: readonly string[]): string | undefined {
  if (given === '') return undefined;
  const until = instanceNamed(given, names);
  if (until === undefined) throw ValidationError.of('until', `names no component of the workflow: '${given}'`, 'INVALID_VALUE');
  if (sources.includes(until)) throw ValidationError.of('until', `'${given}' is a source: name a component the messages reach after it`, 'INVALID_VALUE');
  return until;
}

/** One kind's factory that builds each instance from its own choice (the real kind, a pass-through or a replacement), its processors recorded. */
function byInstance(instances: ReadonlyMap<string, ComponentFactory>, recorder: DryRunRecorder): ComponentFactory {
  const [first] = instances.values();
  if (first?.kind !== 'processor') return first as ComponentFactory;
  return {
    kind: 'processor',
    async create(context) {
      const chosen = instances.get(context.name) ?? passThrough;
      if (chosen.kind !== 'processor') throw new TypeError(`${context.name}: a dry run's stand-in must be a processor`);
      return recorder.wrap(context.name, await chosen.create(context));
    },
  };
}

/** What a dry run's components took in and emitted, with `until` and `maxMessages` applied to their outcomes. */
class DryRunRecorder {
  private readonly seen = new Map<string, WeakSet<LoomMessage>>();
  private readonly passed = new Map<string, number>();

  constructor(
    private readonly outputs: ReadonlyMap<string, DryRunComponentOutput>,
    private readonly until: string | undefined,
    private readonly maxMessages: number,
  ) {}

  /** A processor whose batches are recorded as taken in and whose outputs are capped (and, at `until`, kept from going on). */
  wrap(name: string, processor: Processor): Processor {
    return {
      ...(processor.batching === undefined ? {} : { batching: processor.batching }),
      process: async (batch, signal) => {
        this.received(name, batch);
        const outcomes = await processor.process(batch, signal);
        return outcomes.map((result) => (result.ok ? this.bounded(name, result.outputs) : result));
      },
      close: () => processor.close(),
    };
  }

  /** A message a component emitted on its way downstream (the runtime's onOutput). */
  emitted(name: string, message: LoomMessage): void {
    this.outputs.get(name)?.messages.push(toProto(message));
  }

  private received(name: string, batch: readonly LoomMessage[]): void {
    const output = this.outputs.get(name);
    if (output === undefined) return;
    // a retried message comes back in a later batch: it was taken in once
    const seen = this.seen.get(name) ?? new WeakSet<LoomMessage>();
    this.seen.set(name, seen);
    for (const message of batch) {
      if (seen.has(message)) continue;
      seen.add(message);
      output.received.push(toProto(message));
    }
  }

  private bounded(name: string, outputs: readonly LoomMessage[]): Outcome {
    let kept = outputs;
    if (this.maxMessages > 0) {
      const sent = this.passed.get(name) ?? 0;
      kept = outputs.slice(0, Math.max(0, this.maxMessages - sent));
      this.passed.set(name, sent + kept.length);
      if (kept.length < outputs.length) (this.outputs.get(name) as DryRunComponentOutput).truncated = true;
    }
    if (name !== this.until) return outcome.emit(...kept);
    // the last component that runs: what it emits is answered, and goes no further
    for (const message of kept) this.emitted(name, message);
    return outcome.none();
  }
}
