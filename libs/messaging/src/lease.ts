import { Lifecycle, ShutdownOnce, type TransitionTable } from '@loom/foundation';
import { type KV } from 'nats';
import { isWrongLastSequence, messagingError } from './nats-errors.js';

/** The bucket of every lease (its max_age is the lease time: a value not renewed in time is gone). */
export const LEASE_BUCKET = 'loom_leases';

/** idle (made), waiting (another holds it, or nobody yet), holding, closed. */
export type LeaseState = 'idle' | 'waiting' | 'holding' | 'closed';

const LEASE_TRANSITIONS: TransitionTable<LeaseState> = {
  idle: ['waiting', 'closed'],
  waiting: ['holding', 'closed'],
  holding: ['waiting', 'closed'],
  closed: [],
};

/** What a lease is and what it tells its owner. */
export interface LeaseOptions {
  /** The lease bucket, made with a ttl of `timeMs` (Messaging.keyValue(LEASE_BUCKET, { ttlMs })). */
  readonly bucket: KV;
  /** The lease's key in the bucket: letters, digits, `_`, `-`, `.` (jetStreamToken parts joined by dots). */
  readonly key: string;
  /** Who holds it while this one does, as the bucket shows it. */
  readonly holder: string;
  /** The lease time: the bucket's ttl. */
  readonly timeMs: number;
  /** This one now holds the lease: start the work it guards. */
  readonly onAcquired: () => void;
  /** This one no longer holds it (not renewed in time, taken, or closed): stop the work; the lease waits for it. */
  readonly onLost: (reason: string) => Promise<void>;
  /** A request to the bucket failed (logged by the owner; the lease goes on trying). */
  readonly onError?: (error: unknown) => void;
}

/**
 * A lease on one key of a JetStream key-value bucket whose max_age is the lease time. Taken by creating the key when
 * absent; renewed every third of the lease time by an update that names the revision this one wrote last (so a
 * renewal after someone else took it fails); when two thirds of the lease time pass after the last renewal was sent
 * without one succeeding, the holder gives it up (onLost) while its value is still in the bucket, so no other can
 * take it before the holder stopped. A standby tries to take it every tenth of the lease time, so a lease whose holder
 * died is taken over within the lease time and a tenth after the holder's last renewal. close() gives the lease up
 * and deletes the key, so a standby takes it on its next try.
 */
export class Lease {
  private readonly lifecycle: Lifecycle<LeaseState>;
  private readonly closing = new ShutdownOnce(() => this.shutdown());
  private revision = 0;
  private timer: NodeJS.Timeout | undefined;
  private deadline: NodeJS.Timeout | undefined;
  /** The tick under way (a request to the bucket), awaited by close. */
  private ticking: Promise<void> = Promise.resolve();
  /** The onLost under way: nothing is taken again before it finished. */
  private losing: Promise<void> = Promise.resolve();

  constructor(private readonly options: LeaseOptions) {
    this.lifecycle = new Lifecycle(`lease '${options.key}'`, LEASE_TRANSITIONS, 'idle');
  }

  /** idle, waiting, holding or closed. */
  get state(): LeaseState {
    return this.lifecycle.state;
  }

  /** Begins trying to take the lease. */
  start(): void {
    this.lifecycle.to('waiting');
    this.schedule(0);
  }

  /** Gives the lease up (onLost first, then the key is deleted) and stops trying; a second call waits for the first. */
  close(): Promise<void> {
    return this.closing.call();
  }

  private get renewEveryMs(): number {
    return Math.max(10, Math.floor(this.options.timeMs / 3));
  }

  private get retryEveryMs(): number {
    return Math.max(10, Math.floor(this.options.timeMs / 10));
  }

  private schedule(delayMs: number): void {
    if (this.closing.called) return;
    this.timer = setTimeout(() => {
      this.ticking = this.tick();
    }, delayMs);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    await this.losing;
    if (this.closing.called) return;
    if (this.lifecycle.is('holding')) await this.renew();
    else await this.tryTake();
    this.schedule(this.lifecycle.is('holding') ? this.renewEveryMs : this.retryEveryMs);
  }

  private async tryTake(): Promise<void> {
    const sentAt = Date.now();
    let revision: number;
    try {
      revision = await this.options.bucket.create(this.options.key, this.options.holder);
    } catch (error) {
      // held by another (the key exists): the usual answer of a standby's try; anything else is reported
      if (!isWrongLastSequence(error) && !this.closing.called) this.options.onError?.(messagingError({ what: `take lease '${this.options.key}'` }, error));
      return;
    }
    this.revision = revision;
    if (this.closing.called) {
      // closed while the key was being made: give it back at once
      await this.release();
      return;
    }
    this.lifecycle.to('holding');
    this.armDeadline(sentAt);
    this.options.onAcquired();
  }

  private async renew(): Promise<void> {
    const sentAt = Date.now();
    try {
      this.revision = await this.options.bucket.update(this.options.key, this.options.holder, this.revision);
    } catch (error) {
      if (isWrongLastSequence(error)) {
        this.lose('the lease was taken by another holder');
        return;
      }
      // not renewed this time: the deadline ends the lease unless a later renewal succeeds
      if (!this.closing.called) this.options.onError?.(messagingError({ what: `renew lease '${this.options.key}'` }, error));
      return;
    }
    if (this.lifecycle.is('holding')) this.armDeadline(sentAt);
  }

  /** The lease is given up two thirds of the lease time after the last write that succeeded was sent. */
  private armDeadline(sentAt: number): void {
    clearTimeout(this.deadline);
    const giveUpAt = sentAt + Math.floor((this.options.timeMs * 2) / 3);
    this.deadline = setTimeout(() => this.lose('the lease was not renewed in time'), Math.max(0, giveUpAt - Date.now()));
    this.deadline.unref();
  }

  private lose(reason: string): void {
    if (!this.lifecycle.is('holding')) return;
    clearTimeout(this.deadline);
    this.lifecycle.to('waiting');
    this.losing = this.options.onLost(reason).catch((error: unknown) => this.options.onError?.(error));
  }

  private async release(): Promise<void> {
    // only the value this one wrote: a lease already taken over is left alone
    await this.options.bucket.delete(this.options.key, { previousSeq: this.revision }).catch(() => undefined);
  }

  private async shutdown(): Promise<void> {
    clearTimeout(this.timer);
    await this.ticking;
    await this.losing;
    const held = this.lifecycle.is('holding');
    clearTimeout(this.deadline);
    if (!this.lifecycle.is('idle')) {
      if (held) this.lifecycle.to('waiting');
      if (held) await this.options.onLost('the lease was closed').catch((error: unknown) => this.options.onError?.(error));
      // the work has stopped: the key goes, so a standby takes over on its next try
      if (held) await this.release();
    }
    this.lifecycle.to('closed');
  }
}
