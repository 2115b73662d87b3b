import { type JsMsg } from 'nats';
import { MessagingUnavailableError } from './errors.js';

/**
 * The settlement of one batch envelope's JetStream message (envelope.ts) from the settlements of its messages, each
 * reported once by its delivery (enveloped-delivery.ts): it is acknowledged once every message is settled and at least
 * one was processed (the others terminated, each counted and logged by its owner as a single message is); terminated
 * when all were; nak'd, to be delivered again whole, when any was handed back (the run ended first). A message
 * processed here is not handed out again then (RecentIds.finished); after a crash it comes again: at least once, as a
 * message delivered again after a crash always did. `working` tells JetStream once for all of its messages.
 */
export class EnvelopeSettlement {
  private open: number;
  private processedCount = 0;
  private handedBackAt: { delayMs: number | undefined } | undefined;
  private termReason: string | undefined;
  private touching = false;
  private readonly confirmations: { readonly resolve: () => void; readonly reject: (error: unknown) => void }[] = [];

  constructor(
    private readonly message: JsMsg,
    count: number,
    private readonly what: string,
    /** Called once the envelope was acknowledged (a copy kept for replay). */
    private readonly onAcknowledged: ((message: JsMsg) => void) | undefined,
  ) {
    this.open = count;
  }

  /** One of its messages was processed. */
  processed(): void {
    this.processedCount++;
    this.settledOne();
  }

  /** One of its messages was processed; resolves once JetStream confirmed the envelope's acknowledgement. */
  processedConfirmed(): Promise<void> {
    const confirmed = new Promise<void>((resolve, reject) => this.confirmations.push({ resolve, reject }));
    this.processed();
    return confirmed;
  }

  /** One of its messages was handed back: the envelope is delivered again, after the longest delay asked. */
  handedBack(delayMs: number | undefined): void {
    const delay = this.handedBackAt?.delayMs;
    this.handedBackAt = { delayMs: delay === undefined ? delayMs : delayMs === undefined ? delay : Math.max(delay, delayMs) };
    this.settledOne();
  }

  /** One of its messages failed for good. */
  terminated(reason: string | undefined): void {
    this.termReason ??= reason;
    this.settledOne();
  }

  /** One of its messages is still being worked on: JetStream hears it once per turn. */
  working(): void {
    if (this.touching || this.open === 0) return;
    // a run tells every open message at once
    this.touching = true;
    queueMicrotask(() => (this.touching = false));
    this.message.working();
  }

  private settledOne(): void {
    if (--this.open > 0) return;
    if (this.handedBackAt !== undefined) {
      this.message.nak(this.handedBackAt.delayMs);
      this.refuseConfirmations('a message of its batch was handed back: the batch is delivered again');
    } else if (this.processedCount === 0) {
      this.message.term(this.termReason);
      this.refuseConfirmations('every message of its batch was terminated');
    } else if (this.confirmations.length === 0) {
      this.message.ack();
      this.onAcknowledged?.(this.message);
    } else void this.confirm();
  }

  private async confirm(): Promise<void> {
    const waiting = this.confirmations.splice(0);
    try {
      if (!(await this.message.ackAck())) throw new MessagingUnavailableError(`acknowledge ${this.what}`, 'already settled or expired');
    } catch (error) {
      const failure =
        error instanceof MessagingUnavailableError ? error : new MessagingUnavailableError(`acknowledge ${this.what}`, 'no confirmation', { cause: error });
      for (const waiter of waiting) waiter.reject(failure);
      return;
    }
    this.onAcknowledged?.(this.message);
    for (const waiter of waiting) waiter.resolve();
  }

  private refuseConfirmations(reason: string): void {
    const failure = new MessagingUnavailableError(`acknowledge ${this.what}`, reason);
    for (const waiter of this.confirmations.splice(0)) waiter.reject(failure);
  }
}
