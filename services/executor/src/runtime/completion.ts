import { type Settlement } from '@loom/messaging';
import { type LoomMessage } from './component.js';

/**
 * Completion tracking of stored messages (issue 34): a message delivered from JetStream enters the run with a ticket,
 * and is acknowledged only once everything it led to is finished. The ticket counts holds: one for the delivery itself
 * while it is being forwarded, one for each queued copy of it or of anything made from it (fan-out, each output of a
 * processor, the message handed to a failure handler). A copy's hold is released when its component is done with it:
 * written by a sink (no downstream), filtered out, or passed on (its outputs and failure-handler message hold the
 * ticket by then). At zero holds the delivery is acknowledged, or terminated when a branch failed past its retries with
 * no failure handler. A run that ends (or a component that dies) first abandons it: JetStream delivers it again.
 */

/**
 * Terminates a delivery a branch failed past its retries with no failure handler, given the run's reason (a component's
 * error, for the log): its owner decides what the store itself is told.
 */
export type Terminate = (reason: string) => void;

/** What became of a ticket: still open, or settled one of three ways. */
export type TicketState = 'open' | 'acknowledged' | 'terminated' | 'abandoned';

/**
 * The count of unfinished work one delivery led to; see the top of this file. At zero holds the delivery is acknowledged
 * (Settlement.ack) or terminated (`terminate`); abandoned, it is nak'd; touched, JetStream hears it is still `working`.
 */
export class CompletionTicket {
  /** The delivery's own hold, released by whoever brought it in once its copies are queued. */
  private holds = 1;
  private failure: string | undefined;
  private current: TicketState = 'open';

  constructor(
    private readonly settlement: Settlement,
    private readonly terminate: Terminate,
    private readonly onSettled: (ticket: CompletionTicket) => void,
  ) {}

  /** open until settled. */
  get state(): TicketState {
    return this.current;
  }

  /** One more copy (or output) of the message is queued. */
  hold(): void {
    if (this.current === 'open') this.holds++;
  }

  /** One copy is finished with; at zero the delivery is acknowledged (or terminated, after a failure). */
  release(): void {
    if (this.current !== 'open') return;
    this.holds--;
    if (this.holds > 0) return;
    if (this.failure === undefined) {
      this.settle('acknowledged');
      this.settlement.ack();
    } else {
      this.settle('terminated');
      this.terminate(this.failure);
    }
  }

  /** A branch failed past its retries with no failure handler: once the rest is finished, the delivery is terminated. */
  fail(reason: string): void {
    this.failure ??= reason;
  }

  /** Tells JetStream the delivery is still being worked on, so its ack wait starts again. */
  touch(): void {
    if (this.current === 'open') this.settlement.working();
  }

  /** The run cannot finish it: JetStream delivers it again; later holds and releases change nothing. */
  abandon(): void {
    if (this.current !== 'open') return;
    this.settle('abandoned');
    this.settlement.nak();
  }

  private settle(state: TicketState): void {
    this.current = state;
    this.onSettled(this);
  }
}

/** What a processor's input queue holds: a message and, when it came from JetStream, the ticket of its delivery. */
export interface Queued {
  readonly message: LoomMessage;
  readonly ticket: CompletionTicket | undefined;
}

/** The open tickets of one run: made at each delivery, abandoned together when the run ends. */
export class Completions {
  private readonly open = new Set<CompletionTicket>();

  /** Deliveries entered and not yet settled. */
  get size(): number {
    return this.open.size;
  }

  /** A ticket for a delivery that enters the run now. */
  ticket(settlement: Settlement, terminate: Terminate): CompletionTicket {
    const ticket = new CompletionTicket(settlement, terminate, (settled) => this.open.delete(settled));
    this.open.add(ticket);
    return ticket;
  }

  /**
   * Tells JetStream every open delivery is still being worked on: a message waiting behind a slow component is not
   * delivered a second time while the first is still on its way. Answers how many were told.
   */
  touchAll(): number {
    for (const ticket of this.open) ticket.touch();
    return this.open.size;
  }

  /** Abandons every open ticket (the run ended before they were finished); answers how many. */
  abandonAll(): number {
    const abandoned = [...this.open];
    for (const ticket of abandoned) ticket.abandon();
    return abandoned.length;
  }
}
