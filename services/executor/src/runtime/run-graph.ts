import { type ComponentInstance, FailedPreconditionError, type WorkflowConfiguration } from '@loom/domain';
import { BoundedQueue } from './bounded-queue.js';
import { type ComponentContext, type ComponentFactory, type Inlet, type Options, type Processor, type Source } from './component.js';
import { type Queued } from './completion.js';
import { componentSettings, type ComponentSettings, optionsOf } from './options.js';

/** Counters of one component instance. */
export interface ComponentCounters {
  readonly name: string;
  messagesIn: number;
  messagesOut: number;
  messagesFailed: number;
  messagesRetried: number;
  queueDepth: number;
  lastError: string;
}

/** What every component of the running graph has. */
interface NodeBase {
  readonly instance: ComponentInstance;
  readonly counters: ComponentCounters;
  readonly settings: ComponentSettings;
  /** Where its messages go: only processors take messages. */
  readonly downstream: ProcessorNode[];
  /** Where its failed messages go (`failure_handler`), when it has one. */
  failureHandler: ProcessorNode | undefined;
}

/** A source that produces messages itself (timer, file reader, webhook, graph reader). */
export interface SourceNode extends NodeBase {
  readonly kind: 'source';
  readonly source: Source;
}

/** A source that also takes messages from PublishMessage. */
export interface InletNode extends NodeBase {
  readonly kind: 'inlet';
  readonly source: Inlet;
}

/** A component that takes messages from its bounded input queue, one worker per `concurrency`. */
export interface ProcessorNode extends NodeBase {
  readonly kind: 'processor';
  readonly processor: Processor;
  /** Its input: each message with, when it was delivered from a store (JetStreamIntake), its delivery's completion ticket. */
  readonly queue: BoundedQueue<Queued>;
  readonly workers: Promise<void>[];
}

/** A component of the running graph, told apart by `kind`. */
export type RunNode = SourceNode | InletNode | ProcessorNode;

/** A workflow with no component that could start it, or links that name no component that takes messages. */
export class WorkflowRunError extends FailedPreconditionError {}

/** What building a run's graph takes from the run. */
export interface GraphParts {
  readonly factories: ReadonlyMap<string, ComponentFactory>;
  readonly queueCapacity: number;
  /** The context a component of this instance is built with. */
  readonly contextOf: (instance: ComponentInstance, options: Options) => ComponentContext;
}

/**
 * Builds every component of the workflow side by side and joins them by its links and failure handlers. Every
 * component that was built is in `nodes` (in the workflow's order) even when this throws, so the run can close them.
 */
export async function buildGraph(workflow: WorkflowConfiguration, parts: GraphParts, nodes: Map<string, RunNode>): Promise<void> {
  // components are built side by side: a Python interpreter or a graph connection takes a while to come up
  const creations: Promise<RunNode>[] = [];
  let invalid: { readonly error: unknown } | undefined;
  try {
    for (const [index, instance] of workflow.components.entries()) creations.push(createNode(index, instance, parts));
  } catch (error) {
    // a bad option of a later component: those already being built finish, so they can be closed
    invalid = { error };
  }
  const results = await Promise.allSettled(creations);
  for (const result of results) if (result.status === 'fulfilled') nodes.set(result.value.instance.name, result.value);
  if (invalid !== undefined) throw invalid.error;
  const failure = results.find((result) => result.status === 'rejected');
  if (failure !== undefined) throw failure.reason;
  link(workflow, nodes);
}

/** Starts building one component; a kind this executor cannot run or a bad option throws at once, before any await. */
function createNode(index: number, instance: ComponentInstance, parts: GraphParts): Promise<RunNode> {
  const factory = parts.factories.get(instance.component.qualifiedName);
  if (factory === undefined) {
    throw new WorkflowRunError(`components[${index}] (${instance.name}): component kind ${instance.component.qualifiedName} cannot run in this executor yet`);
  }
  const options = optionsOf(instance);
  const settings = componentSettings(instance, index, options);
  const counters: ComponentCounters = {
    name: instance.name,
    messagesIn: 0,
    messagesOut: 0,
    messagesFailed: 0,
    messagesRetried: 0,
    queueDepth: 0,
    lastError: '',
  };
  const base = { instance, counters, settings, downstream: [], failureHandler: undefined };
  const context = parts.contextOf(instance, options);
  switch (factory.kind) {
    case 'processor': {
      const queue = new BoundedQueue<Queued>(`component '${instance.name}'`, parts.queueCapacity);
      return factory.create(context).then((processor): ProcessorNode => ({ ...base, kind: 'processor', processor, queue, workers: [] }));
    }
    case 'source':
      return factory.create(context).then((source): SourceNode => ({ ...base, kind: 'source', source }));
    case 'inlet':
      return factory.create(context).then((source): InletNode => ({ ...base, kind: 'inlet', source }));
  }
}

/** Joins the nodes by the workflow's links and each component's failure handler; both must name a component that takes messages. */
function link(workflow: WorkflowConfiguration, nodes: ReadonlyMap<string, RunNode>): void {
  for (const { from: fromName, to: toName } of workflow.links) {
    const from = nodes.get(fromName);
    const to = nodes.get(toName);
    if (from === undefined || to === undefined) throw new WorkflowRunError(`link ${fromName} → ${toName} names no component of this workflow`);
    if (to.kind !== 'processor') throw new WorkflowRunError(`link ${fromName} → ${toName}: ${toName} is a source and takes no messages`);
    from.downstream.push(to);
  }
  for (const node of nodes.values()) {
    const handler = node.settings.failureHandler;
    if (handler === undefined) continue;
    const target = nodes.get(handler);
    if (target?.kind !== 'processor') throw new WorkflowRunError(`${node.instance.name}: failure_handler '${handler}' names no component that takes messages`);
    node.failureHandler = target;
  }
}
