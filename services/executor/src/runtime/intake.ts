import { type Logger } from '@loom/telemetry';
import { type Emit, type LoomMessage, type SignalSource } from './component.js';
import { type ComponentError } from './component-error.js';
import { type CompletionTicket } from './completion.js';
import { type InletNode, type SourceNode } from './run-graph.js';

/** What became of a published message. */
export type PublishOutcome = 'accepted' | 'duplicate';

/** The run's message path as an intake sees it (MessageFlow). */
export interface RunInput {
  /** A source's message straight into the run: traced, queued downstream (waiting while a queue is full), counted. */
  emit(node: SourceNode | InletNode, message: LoomMessage, withdrawal?: SignalSource): Promise<void>;
  /**
   * A source's message kept outside the run first: traced, handed to `store` (which resolves once it is kept, true when
   * it was a duplicate and not kept again), counted unless a duplicate. Resolves with what `store` answered.
   */
  emitStored(node: SourceNode | InletNode, message: LoomMessage, store: (sent: LoomMessage) => Promise<boolean>): Promise<boolean>;
  /**
   * A kept message coming back into the run with its delivery's completion ticket; resolves once it is queued
   * downstream (waiting while a queue is full), or once the run closed and abandoned the ticket.
   */
  enter(node: SourceNode | InletNode, message: LoomMessage, ticket: CompletionTicket): Promise<void>;
}

/** What an intake takes from its run. */
export interface IntakeParts {
  readonly workflowName: string;
  readonly runId: string;
  readonly logger: Logger;
  readonly input: RunInput;
  /** The run's sources and inlets, in the workflow's order (all of them once the run is built). */
  readonly sources: () => readonly (SourceNode | InletNode)[];
  /** Throws FailedPreconditionError unless the run takes published messages now: RUNNING, or PAUSED too when `whilePaused`. */
  readonly checkTaking: (whilePaused: boolean) => void;
  /** What brings messages into the run broke: the run fails with it. */
  readonly fail: (error: ComponentError) => void;
}

/**
 * How a run takes its sources' messages, chosen once when the run is built (RunOptions.intake): in the run's memory
 * (MemoryIntake: a message published or emitted goes straight to the bounded queues) or kept in JetStream first
 * (JetStreamIntake: answered once stored, brought into the run by a consumer per source, each delivery settled once all
 * it led to is finished). The run calls `start` once its components are built and before its sources start,
 * `pause`/`resume` as it is paused and resumed, `stopInput` once its sources stopped and `close` once its workers ended,
 * each of the last two once.
 */
export interface Intake {
  /**
   * Whether a batch's publishes may all be sent before the first is answered, because what keeps them takes them in the
   * order sent; otherwise each waits for the one before (in memory: a full queue holds the rest back, in order).
   */
  readonly concurrentPublishes: boolean;
  /** The emit a source component is started with (the run holds it back while paused). */
  emitter(node: SourceNode | InletNode): Emit;
  /**
   * A message published to an inlet: 'accepted' once taken (queued, or stored), 'duplicate' when a message with its
   * id was taken before and this one is not taken again. `clientId`: the id was chosen by the caller.
   */
  publish(node: InletNode, message: LoomMessage, withdrawal: SignalSource, clientId: boolean): Promise<PublishOutcome>;
  /** Gets ready to take the sources' messages, and starts bringing kept ones into the run. */
  start(): Promise<void>;
  /** Stops bringing kept messages into the run (those in flight finish); resolves once it stopped. */
  pause(): Promise<void>;
  /** Brings kept messages into the run again. */
  resume(): Promise<void>;
  /** Stops bringing messages into the run, for good; resolves once nothing more enters. Never rejects. */
  stopInput(): Promise<void>;
  /** Hands back what entered the run and was not finished, to be delivered again (by a later run, or another executor). */
  close(): void;
}

/** Makes a run's intake from its parts (RunOptions.intake; default memoryIntake). */
export type IntakeFactory = (parts: IntakeParts) => Intake;
