import { type Emit, type LoomMessage, type SignalSource } from './component.js';
import { type Intake, type IntakeFactory, type IntakeParts, type PublishOutcome } from './intake.js';
import { type InletNode, type SourceNode } from './run-graph.js';

/** How many client-chosen message ids each inlet remembers for de-duplication (per run). */
export const DEDUP_WINDOW = 65_536;

/**
 * A run's messages held in its memory: a source's message goes straight to the bounded queues, and a publish to an inlet
 * is accepted once its first queue took it (waiting while full). A client-chosen id among the inlet's last DEDUP_WINDOW
 * accepted is answered 'duplicate' and not published again; a publish of an id still in progress waits for that one's
 * outcome. A paused run refuses publishes: nothing would keep them. An acknowledged message is lost if the process
 * dies before it is processed.
 */
export class MemoryIntake implements Intake {
  readonly concurrentPublishes = false;
  /** Per inlet: client-chosen ids accepted (true) or being published (their promise), oldest first. */
  private readonly recentIds = new Map<string, Map<string, Promise<void> | true>>();

  constructor(private readonly parts: IntakeParts) {}

  emitter(node: SourceNode | InletNode): Emit {
    return (message, withdrawal) => this.parts.input.emit(node, message, withdrawal);
  }

  /** Through the inlet component, whose emit is this intake's emitter held back by the run while paused. */
  async publish(node: InletNode, message: LoomMessage, withdrawal: SignalSource, clientId: boolean): Promise<PublishOutcome> {
    this.parts.checkTaking(false);
    const inlet = node.source;
    if (!clientId) {
      await inlet.publish(message, withdrawal);
      return 'accepted';
    }
    const inletName = node.instance.name;
    let recent = this.recentIds.get(inletName);
    if (recent === undefined) {
      recent = new Map();
      this.recentIds.set(inletName, recent);
    }
    const earlier = recent.get(message.id);
    if (earlier === true) return 'duplicate';
    if (earlier !== undefined) {
      // the same id is being published right now: it is a duplicate once that one is accepted, and tried again if it is not
      return earlier.then(
        () => 'duplicate',
        () => this.publish(node, message, withdrawal, clientId),
      );
    }
    const pending = inlet.publish(message, withdrawal);
    recent.set(message.id, pending);
    try {
      await pending;
    } catch (error) {
      recent.delete(message.id);
      throw error;
    }
    recent.set(message.id, true);
    if (recent.size > DEDUP_WINDOW) {
      // Maps iterate in insertion order: the first key is the oldest id
      for (const [oldest, state] of recent) {
        if (state === true) {
          recent.delete(oldest);
          break;
        }
      }
    }
    return 'accepted';
  }

  /** Nothing to get ready: the sources' emits are the way in. */
  start(): Promise<void> {
    return Promise.resolve();
  }

  /** Nothing is brought in apart from the sources, which the run holds back while paused. */
  pause(): Promise<void> {
    return Promise.resolve();
  }

  resume(): Promise<void> {
    return Promise.resolve();
  }

  stopInput(): Promise<void> {
    return Promise.resolve();
  }

  /** Nothing is kept outside the run: what it did not finish is gone with it. */
  close(): void {}
}

/** The in-memory intake, a run's default. */
export const memoryIntake: IntakeFactory = (parts) => new MemoryIntake(parts);
