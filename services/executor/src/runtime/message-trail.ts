import { parseStoredName } from '@loom/domain';
import { type LoomMessage } from './component.js';
import { type ComponentError, type FailureRecord } from './component-error.js';

/** Where a message came from: the id it entered the run with and the source (or inlet) that took it in. */
export interface MessageOrigin {
  readonly messageId: string;
  /** The source's instance name; empty when not known (a message brought in from outside a source). */
  readonly source: string;
}

// the origin of each message object in a run, handed on to its copies and outputs by the message flow: components
// build outputs as new objects (and may give them new ids), so the origin cannot travel in the message's fields. It
// rides on the object under a symbol of its own (a spread copy of a message takes it along, JSON and structuredClone
// leave it out); only a message frozen by its maker keeps it in a WeakMap. A WeakMap of every message in flight made
// garbage collection pathological under load: turns of issue 50's bench took up to 15 times as long
const ORIGIN = Symbol('loom.origin');
const frozenOrigins = new WeakMap<LoomMessage, MessageOrigin>();

type Carrier = LoomMessage & { [ORIGIN]?: MessageOrigin };

function recorded(message: LoomMessage): MessageOrigin | undefined {
  return (message as Carrier)[ORIGIN] ?? frozenOrigins.get(message);
}

/** The origin of a message: the one the flow recorded, or the message's own id when it has none. */
export function originOf(message: LoomMessage): MessageOrigin {
  return recorded(message) ?? { messageId: message.id, source: '' };
}

/** Records where a message came from. */
export function setOrigin(message: LoomMessage, origin: MessageOrigin): void {
  if (Object.isExtensible(message)) (message as Carrier)[ORIGIN] = origin;
  else frozenOrigins.set(message, origin);
}

/** Hands `from`'s origin on to `to` (a copy or an output of it), unless `to` has one of its own. */
export function inheritOrigin(to: LoomMessage, from: LoomMessage): void {
  if (to === from || recorded(to) !== undefined) return;
  const origin = recorded(from);
  if (origin !== undefined) setOrigin(to, origin);
}

/** What a message event tells (MessageEventKind in executor.proto). */
export type MessageEventKind = 'ACCEPTED' | 'PROCESSED' | 'ATTEMPT_FAILED' | 'FAILED' | 'RETRIED';

/** A failure as the trail keeps it: plain text, redacted when it is answered. */
export interface TrailFailure extends FailureRecord {
  readonly message: string;
}

/** One thing that happened to a message (or to one it led to) at a component. */
export interface MessageEvent {
  readonly time: number;
  readonly kind: MessageEventKind;
  readonly component: string;
  /** The id of the message it happened to (the traced one, or an output of it). */
  readonly messageId: string;
  readonly outputIds?: readonly string[];
  readonly outputCount?: number;
  readonly attempt?: number;
  readonly failure?: TrailFailure;
  readonly failureHandler?: string;
  readonly workflowName: string;
  readonly workflowVersion: number;
  readonly runId: string;
}

/** The bounds of a trail: the most messages per workflow, and how long from each message's first event. */
export interface TrailBounds {
  readonly maxMessages: number;
  readonly retentionMs: number;
}

/** Most events kept of one message (a statement streaming many records makes one event, a fan-out one per output). */
export const MAX_EVENTS_PER_MESSAGE = 256;
/** Most output ids one PROCESSED event names. */
export const MAX_OUTPUT_IDS = 100;

interface Entry {
  readonly firstAt: number;
  readonly events: MessageEvent[];
  /** Events past MAX_EVENTS_PER_MESSAGE, not kept. */
  dropped: number;
}

/** The messages of one workflow: by id, and in the order they came (oldest at `head`). */
interface WorkflowMessages {
  readonly byId: Map<string, Entry>;
  order: { readonly id: string; readonly entry: Entry }[];
  head: number;
}

/**
 * The executor's record of recent message events, per workflow, across its runs: by the id a message entered its run
 * with, every event of it and of the messages it led to, in order. Bounded by `maxMessages` per workflow (the oldest
 * message goes first) and `retentionMs` from a message's first event; in memory, lost when the process ends.
 */
export class MessageTrail {
  private readonly workflows = new Map<string, WorkflowMessages>();

  constructor(
    readonly bounds: TrailBounds,
    private readonly now: () => number = Date.now,
  ) {}

  /** The recorder of one run of a workflow; undefined when the trail keeps nothing (maxMessages 0). */
  forRun(workflowName: string, runId: string, workflowVersion: number): RunTrail | undefined {
    if (this.bounds.maxMessages === 0) return undefined;
    return new RunTrail(this, workflowName, runId, workflowVersion);
  }

  /** Adds an event (its `time` set here) of the message that entered a run as `origin`. */
  add(origin: string, event: MessageEvent): void {
    const time = this.now();
    (event as { time: number }).time = time;
    let messages = this.workflows.get(event.workflowName);
    if (messages === undefined) {
      messages = { byId: new Map(), order: [], head: 0 };
      this.workflows.set(event.workflowName, messages);
    }
    let entry = messages.byId.get(origin);
    if (entry === undefined || entry.firstAt < time - this.bounds.retentionMs) {
      if (entry !== undefined) messages.byId.delete(origin);
      this.evict(messages, time, 1);
      entry = { firstAt: time, events: [], dropped: 0 };
      messages.byId.set(origin, entry);
      messages.order.push({ id: origin, entry });
    }
    if (entry.events.length < MAX_EVENTS_PER_MESSAGE) entry.events.push(event);
    else entry.dropped++;
  }

  /**
   * The events of a message, by the id it entered its run with, oldest first; of one workflow (its stored name, or its
   * name without the `_<uuid>`), or of every workflow when `workflowName` is empty. Undefined when none is kept (never
   * seen, or past the bounds).
   */
  find(messageId: string, workflowName: string): { readonly events: MessageEvent[]; readonly dropped: number } | undefined {
    const time = this.now();
    const events: MessageEvent[] = [];
    let dropped = 0;
    for (const [name, messages] of this.workflows) {
      if (workflowName !== '' && name !== workflowName && parseStoredName(name)?.base !== workflowName) continue;
      this.evict(messages, time, 0);
      const entry = messages.byId.get(messageId);
      if (entry === undefined) continue;
      events.push(...entry.events);
      dropped += entry.dropped;
    }
    if (events.length === 0) return undefined;
    events.sort((a, b) => a.time - b.time);
    return { events, dropped };
  }

  /**
   * Removes the messages past the retention, then the oldest until `room` more fit. The ids go in an array read from
   * `head` rather than by deleting a Map's first entries, which leaves holes every later walk from the start skips.
   */
  private evict(messages: WorkflowMessages, time: number, room: number): void {
    const { byId, order } = messages;
    while (messages.head < order.length) {
      const { id, entry } = order[messages.head] as WorkflowMessages['order'][number];
      // a slot whose id was seen anew after it expired is stale: the id's current entry is further on
      if (byId.get(id) === entry) {
        if (byId.size + room <= this.bounds.maxMessages && entry.firstAt >= time - this.bounds.retentionMs) break;
        byId.delete(id);
      }
      messages.head++;
    }
    if (messages.head > 1024 && messages.head * 2 > messages.order.length) {
      messages.order = messages.order.slice(messages.head);
      messages.head = 0;
    }
  }
}

/** What one run records in the trail: its workflow, version and run id go with every event. */
export class RunTrail {
  constructor(
    private readonly trail: MessageTrail,
    private readonly workflowName: string,
    private readonly runId: string,
    private readonly workflowVersion: number,
  ) {}

  /** A source or inlet took a message into the run. */
  accepted(component: string, message: LoomMessage): void {
    this.add(component, message, 'ACCEPTED', {});
  }

  /** A component processed a message and emitted `outputs` (none: filtered out or consumed). */
  processed(component: string, message: LoomMessage, outputs: readonly LoomMessage[]): void {
    const outputIds = outputs.length <= MAX_OUTPUT_IDS ? outputs.map((output) => output.id) : outputs.slice(0, MAX_OUTPUT_IDS).map((output) => output.id);
    this.add(component, message, 'PROCESSED', { outputIds, outputCount: outputs.length });
  }

  /** An attempt at a component failed transiently; it is tried again. */
  attemptFailed(component: string, message: LoomMessage, attempt: number, failure: ComponentError): void {
    this.add(component, message, 'ATTEMPT_FAILED', { attempt, failure: trailFailure(failure) });
  }

  /** A message failed for good at a component, to its failure handler when it has one, else to the failure store. */
  failed(component: string, message: LoomMessage, attempt: number, failure: ComponentError, failureHandler: string | undefined): void {
    this.add(component, message, 'FAILED', { attempt, failure: trailFailure(failure), ...(failureHandler === undefined ? {} : { failureHandler }) });
  }

  /** A message came into the run again from the failure store, at `component`. */
  retried(component: string, message: LoomMessage): void {
    this.add(component, message, 'RETRIED', {});
  }

  private add(component: string, message: LoomMessage, kind: MessageEventKind, details: Partial<MessageEvent>): void {
    // one object an event, its time set by the trail
    const event = details as { -readonly [K in keyof MessageEvent]: MessageEvent[K] };
    event.kind = kind;
    event.component = component;
    event.messageId = message.id;
    event.workflowName = this.workflowName;
    event.workflowVersion = this.workflowVersion;
    event.runId = this.runId;
    this.trail.add(originOf(message).messageId, event);
  }
}

function trailFailure(failure: ComponentError): TrailFailure {
  return { ...failure.record(), message: failure.message };
}
