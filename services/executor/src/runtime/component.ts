import { type ComponentInstance, type ResourceInstance, type Skill, UnavailableError } from '@loom/domain';
import { type Clock } from '@loom/foundation';
import { type Logger } from '@loom/telemetry';

/** A message flowing through a workflow: a JSON object body plus string headers. */
export interface LoomMessage {
  readonly id: string;
  readonly body: Record<string, unknown>;
  readonly headers: Record<string, string>;
}

/** What one processor call made of one message. */
export type Outcome =
  /** Done: these messages go downstream (none: the message was filtered out or consumed). */
  | { readonly ok: true; readonly outputs: readonly LoomMessage[] }
  /**
   * Failed: `transient` failures are retried `max_retry` times `delay` ms apart; the rest go to the
   * failure handler. `unreachable`: what the component writes to (its graph store) could not be
   * reached; still so once the retries are spent, the run fails, not only the message. `cause`: the
   * typed error behind it, when the component has one (its kind travels to the failure handler and
   * the audit log; see ComponentError).
   */
  | { readonly ok: false; readonly error: string; readonly transient: boolean; readonly unreachable?: true; readonly cause?: unknown };

/** Shorthands for outcomes. */
export const outcome = {
  emit: (...outputs: LoomMessage[]): Outcome => ({ ok: true, outputs }),
  none: (): Outcome => ({ ok: true, outputs: [] }),
  fail: (error: string, transient = false, cause?: unknown): Outcome =>
    cause === undefined ? { ok: false, error, transient } : { ok: false, error, transient, cause },
  unreachable: (error: string, cause?: unknown): Outcome =>
    cause === undefined ? { ok: false, error, transient: true, unreachable: true } : { ok: false, error, transient: true, unreachable: true, cause },
};

/**
 * A component can no longer work at all (a script host that cannot be restarted): thrown from
 * `process`, it fails the run, not only the batch.
 */
export class ComponentFailedError extends UnavailableError {}

/**
 * A component that takes messages (processor, skill, persistence, sink). `process` gets a batch
 * of messages taken together from the component's input queue (at least one) and answers one
 * outcome per message, in order; it must not throw for a bad message (a throw fails the whole
 * batch as a transient error). Batches let a component amortise a costly call (an isolate, a
 * database round trip); a component that works message by message loops over the batch.
 */
export interface Processor {
  process(batch: readonly LoomMessage[], signal: AbortSignal): Promise<readonly Outcome[]>;
  /**
   * Batches gathered for this component: up to `size` messages, waiting at most `gatherMs` after
   * the first for the rest. Absent: whatever is waiting, up to the run's batch size, at once.
   */
  readonly batching?: { readonly size: number; readonly gatherMs: number };
  /** Releases what the component holds (an isolate, a connection); called once, after draining. */
  close(): Promise<void>;
}

/**
 * Where the signal that withdraws a waiting message comes from: an AbortController, a gRPC call's
 * context, `{ signal }`. It is read only when a queue is full and the message must wait, because a
 * gRPC call's context makes its AbortController when its signal is first read (per-call waste when
 * almost every message finds room).
 */
export interface SignalSource {
  readonly signal: AbortSignal;
}

/**
 * Hands a message to the workflow; resolves once every downstream queue accepted it, waiting
 * while one is full (back-pressure). `withdrawal`'s signal withdraws a message still waiting.
 */
export type Emit = (message: LoomMessage, withdrawal?: SignalSource) => Promise<void>;

/** A component that produces messages (timer, inlet, file reader, webhook, graph reader). */
export interface Source {
  /** Starts producing; resolves once the source is ready (a port bound, a directory checked). */
  start(emit: Emit): Promise<void>;
  /** Stops producing; resolves once nothing more will be emitted. */
  stop(): Promise<void>;
}

/** A source that also takes messages from PublishMessage. */
export interface Inlet extends Source {
  publish(message: LoomMessage, withdrawal: SignalSource): Promise<void>;
}

/** Typed access to a component instance's option values, falling back to the catalog defaults. */
export interface Options {
  string(name: string): string;
  optionalString(name: string): string | undefined;
  integer(name: string): number;
  boolean(name: string): boolean;
  /** A JSON option (headers, rules); undefined when unset. */
  json(name: string): unknown;
}

/** What a component is built with. */
export interface ComponentContext {
  /** The instance name, `<component_name>_<uuid>`. */
  readonly name: string;
  readonly instance: ComponentInstance;
  readonly options: Options;
  /** The instance's resource with plain parameter values (decrypted at start), if it has one. */
  readonly resource: ResourceInstance | undefined;
  /** The workflow's `resources` and `workflowResources` (decrypted at start), which options may name; absent: none. */
  readonly workflowResources?: readonly ResourceInstance[];
  readonly workflowName: string;
  /** The version of the stored workflow the run runs; 0 or absent when not known (a dry run, a test). */
  readonly workflowVersion?: number;
  readonly logger: Logger;
  /** Aborts when the run stops. */
  readonly signal: AbortSignal;
  /** Where a component reads the time and waits for it; absent: the wall clock (a test moves one by hand). */
  readonly clock?: Clock;
  /** True in DryRun: no side effects outside the process. */
  readonly dryRun: boolean;
  /** The workflow run's private temp directory, created at first call and removed when the run ends. */
  readonly privateDirectory: () => string;
  /** The workflow's `skills` array, where a component's skill given by name only is looked up first. */
  readonly workflowSkills?: readonly Skill[];
  /**
   * The component died outside a single message (a source whose directory is gone): the run goes
   * FAILED with this reason and stops. A processor throws ComponentFailedError instead.
   */
  readonly fail: (error: unknown) => void;
}

/** Builds the runtime of one component kind. */
export type ComponentFactory =
  | { readonly kind: 'processor'; create(context: ComponentContext): Promise<Processor> }
  | { readonly kind: 'source'; create(context: ComponentContext): Promise<Source> }
  | { readonly kind: 'inlet'; create(context: ComponentContext): Promise<Inlet> };
