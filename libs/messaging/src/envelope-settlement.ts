import { type JsMsg } from 'nats';
import { MessagingUnavailableError } from './errors.js';

/** A message's settlement inside an envelope: source-consumer.ts's Settlement, and the confirmation ackConfirmed waits for. */
export interface EnvelopedSettlement {
  readonly ack: () => void;
  readonly nak: (delayMs?: number) => void;
  readonly term: (reason?: string) => void;
  readonly working: () => void;
  /** Processed; resolves once JetStream confirmed the envelope's acknowledgement (all of its messages settled). */
  readonly ackConfirmed: () => Promise<void>;
}

/**
 * The settlement of one batch envelope's JetStream message (envelope.ts) from the settlements of its messages: it is
 * acknowledged once every message is settled and at least one was processed (the others terminated, each counted and
 * logged by its owner as a single message is); terminated when all were; nak'd, to be delivered again whole, when any
 * was handed back (the run ended first). A message already processed then comes again: at least once, as a message
 * delivered again after a crash is. A message's `working` tells JetStream once for all of them.
 */
export class EnvelopeSettlement {
  private open: number;
  private processed = 0;
  private handedBack = false;
  private nakDelayMs: number | undefined;
  private termReason: string | undefined;
  private touching = false;
  private readonly confirmations: { readonly resolve: () => void; readonly reject: (error: unknown) => void }[] = [];

  constructor(
    private readonly message: JsMsg,
    count: number,
    private readonly what: string,
    /** Called once the envelope was acknowledged (a copy kept for replay). */
    private readonly onAcknowledged: (message: JsMsg) => void,
  ) {
    this.open = count;
  }

  /** The settlement of one of its messages; settle each once. */
  settlement(): EnvelopedSettlement {
    let settled = false;
    const settle = (): boolean => {
      if (settled) return false;
      settled = true;
      this.open--;
      return true;
    };
    return {
      ack: () => {
        if (!settle()) return;
        this.processed++;
        this.finish();
      },
      ackConfirmed: () => {
        const confirmed = new Promise<void>((resolve, reject) => this.confirmations.push({ resolve, reject }));
        if (settle()) {
          this.processed++;
          this.finish();
        }
        return confirmed;
      },
      nak: (delayMs?: number) => {
        if (!settle()) return;
        this.handedBack = true;
        if (delayMs !== undefined) this.nakDelayMs = Math.max(this.nakDelayMs ?? 0, delayMs);
        this.finish();
      },
      term: (reason?: string) => {
        if (!settle()) return;
        this.termReason ??= reason;
        this.finish();
      },
      working: () => {
        if (settled || this.touching) return;
        // a run tells every open message at once: the envelope hears it once per turn
        this.touching = true;
        queueMicrotask(() => (this.touching = false));
        this.message.working();
      },
    };
  }

  private finish(): void {
    if (this.open > 0) return;
    if (this.handedBack) {
      this.message.nak(this.nakDelayMs);
      this.refuseConfirmations('a message of its batch was handed back: the batch is delivered again');
    } else if (this.processed === 0) {
      this.message.term(this.termReason);
      this.refuseConfirmations('every message of its batch was terminated');
    } else if (this.confirmations.length === 0) {
      this.message.ack();
      this.onAcknowledged(this.message);
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
    this.onAcknowledged(this.message);
    for (const waiter of waiting) waiter.resolve();
  }

  private refuseConfirmations(reason: string): void {
    const failure = new MessagingUnavailableError(`acknowledge ${this.what}`, reason);
    for (const waiter of this.confirmations.splice(0)) waiter.reject(failure);
  }
}
