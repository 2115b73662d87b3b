/**
 * Most message ids an executor remembers per workflow stream: at about 100 bytes an id, some 13 MiB for a busy
 * workflow. Past it the oldest are forgotten before their duplicate window ends (JetStream's own de-duplication of a
 * whole batch retried as it was, and of a single message, still holds for the whole window).
 */
export const MAX_RECENT_IDS = 131_072;

/** Ids added between two sweeps of those past the window (a sweep stops at the first id within it). */
const SWEEP_EVERY = 1024;

/** What is known of an id: the stream sequence of the JetStream message that stored it, or the publish storing it now. */
export type KnownId = number | Promise<{ readonly sequence: number }>;

interface Entry {
  known: KnownId;
  readonly at: number;
  /** Its delivery was settled (processed, or terminated) by this executor. */
  finished?: true;
}

/**
 * The message ids of one workflow's stream that this executor stored or was delivered within the stream's duplicate
 * window (issue 51): the per-message half of de-duplication once messages are stored in batch envelopes (envelope.ts).
 * JetStream de-duplicates a JetStream message by its id, so a single message (stored under its own id) and a batch
 * retried with the same ids are stored once anyway; an id that comes again in a *different* batch is caught here, on
 * the publishing side (answered duplicate, not stored again) and on the consuming side (a delivery of an id this
 * executor already took from another stored message is acknowledged without entering the run). It is per executor
 * and lives as long as the process: see docs/decisions.md (issue 51, Must 2) for what that leaves to MERGE.
 */
export class RecentIds {
  private readonly entries = new Map<string, Entry>();
  /** Ids added since the last sweep of expired ones. */
  private added = 0;

  constructor(
    private readonly windowMs: number,
    private readonly max = MAX_RECENT_IDS,
    private readonly now: () => number = Date.now,
  ) {}

  /** What is known of `id` within the window, or undefined. */
  get(id: string): KnownId | undefined {
    return this.live(id)?.known;
  }

  /** `id` is being stored by a publish of this executor now. */
  publishing(id: string, stored: Promise<{ readonly sequence: number }>): void {
    this.add(id, stored);
  }

  /** `id` was stored at `sequence`; an id already known stored at another sequence keeps the first (it is the one delivered). */
  stored(id: string, sequence: number): void {
    const entry = this.entries.get(id);
    if (entry === undefined) this.add(id, sequence);
    else if (typeof entry.known !== 'number') entry.known = sequence;
  }

  /** The publish storing `id` failed: nothing is known of it, unless a delivery of it came meanwhile. */
  forget(id: string): void {
    if (typeof this.entries.get(id)?.known !== 'number') this.entries.delete(id);
  }

  /**
   * A delivery of `id` stored at `sequence`: true when it should enter the run (first seen, or the same stored message
   * delivered again and not finished here), false when this executor knows the id stored by another JetStream message
   * within the window, or finished it already (a batch envelope handed back whole for another of its messages).
   */
  delivered(id: string, sequence: number): boolean {
    const entry = this.live(id);
    if (entry === undefined) {
      this.add(id, sequence);
      return true;
    }
    if (typeof entry.known === 'number') return entry.known === sequence && entry.finished !== true;
    // a publish of this executor still waiting for JetStream's answer: this delivery is the stored one
    entry.known = sequence;
    return true;
  }

  /** The delivery of `id` was settled for good here (acknowledged or terminated): a redelivery of it need not enter again. */
  finished(id: string): void {
    const entry = this.entries.get(id);
    if (entry !== undefined) entry.finished = true;
  }

  /** Ids remembered now (expired ones included until they are met or pushed out). */
  get size(): number {
    return this.entries.size;
  }

  /** Its entry unless past the window (then forgotten). */
  private live(id: string): Entry | undefined {
    const entry = this.entries.get(id);
    if (entry === undefined || this.now() - entry.at <= this.windowMs) return entry;
    this.entries.delete(id);
    return undefined;
  }

  /** Remembers an id not remembered now. */
  private add(id: string, known: KnownId): void {
    this.entries.set(id, { known, at: this.now() });
    if (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value!);
    if (++this.added >= SWEEP_EVERY) this.sweep();
  }

  /** Forgets the ids past the window; Maps iterate in insertion order, so the oldest come first. */
  private sweep(): void {
    this.added = 0;
    const now = this.now();
    for (const [id, entry] of this.entries) {
      if (now - entry.at <= this.windowMs) return;
      this.entries.delete(id);
    }
  }
}
