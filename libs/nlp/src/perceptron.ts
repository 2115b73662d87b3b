import { FailedPreconditionError } from '@loom/domain';

/**
 * A multi-class averaged perceptron over hashed features. Feature `f` owns the block of weights
 * `(f + c) & mask` for classes `c`, so scoring one feature reads one contiguous run of memory.
 */
export class Perceptron {
  readonly mask: number;
  readonly weights: Float32Array;
  private totals: Float64Array | undefined;
  private stamps: Int32Array | undefined;
  private clock = 1;

  constructor(
    readonly classes: number,
    readonly bits: number,
    weights?: Float32Array,
  ) {
    this.mask = (1 << bits) - 1;
    this.weights = weights ?? new Float32Array(1 << bits);
  }

  /** Adds each class's score into `out` (length `classes`, zeroed here). */
  score(features: Int32Array, count: number, out: Float32Array): void {
    out.fill(0);
    const w = this.weights;
    const mask = this.mask;
    const classes = this.classes;
    for (let i = 0; i < count; i++) {
      const base = features[i]! & mask;
      if (base + classes <= mask) {
        for (let c = 0; c < classes; c++) out[c]! += w[base + c]!;
      } else {
        for (let c = 0; c < classes; c++) out[c]! += w[(base + c) & mask]!;
      }
    }
  }

  /** Best class by score among those `allowed` (all when omitted). */
  static best(scores: Float32Array, allowed?: (c: number) => boolean): number {
    let best = -1;
    let bestScore = -Infinity;
    for (let c = 0; c < scores.length; c++) {
      if (allowed && !allowed(c)) continue;
      if (scores[c]! > bestScore) {
        bestScore = scores[c]!;
        best = c;
      }
    }
    return best;
  }

  /** Counts one training example; call before update() for each example so averages weigh examples equally. */
  tick(): void {
    this.clock++;
  }

  /** Moves weights towards `gold` and away from `guess` for the given features. */
  update(features: Int32Array, count: number, gold: number, guess: number): void {
    if (gold === guess) return;
    if (!this.totals || !this.stamps) {
      this.totals = new Float64Array(this.weights.length);
      this.stamps = new Int32Array(this.weights.length);
    }
    for (let i = 0; i < count; i++) {
      const base = features[i]! & this.mask;
      this.bump((base + gold) & this.mask, 1);
      this.bump((base + guess) & this.mask, -1);
    }
  }

  /** Adds `delta` to class `cls`'s weight of each feature (structured updates, where gold and guess read different features). */
  adjust(features: Int32Array, count: number, cls: number, delta: number): void {
    if (!this.totals || !this.stamps) {
      this.totals = new Float64Array(this.weights.length);
      this.stamps = new Int32Array(this.weights.length);
    }
    for (let i = 0; i < count; i++) this.bump(((features[i]! & this.mask) + cls) & this.mask, delta);
  }

  private bump(index: number, delta: number): void {
    const totals = this.totals!;
    const stamps = this.stamps!;
    totals[index]! += (this.clock - stamps[index]!) * this.weights[index]!;
    stamps[index] = this.clock;
    this.weights[index]! += delta;
  }

  /** Replaces the weights by their averages over all examples seen; training ends here. */
  average(): void {
    if (!this.totals || !this.stamps) return;
    const w = this.weights;
    for (let i = 0; i < w.length; i++) {
      const total = this.totals[i]! + (this.clock - this.stamps[i]!) * w[i]!;
      w[i] = total / this.clock;
    }
    this.totals = undefined;
    this.stamps = undefined;
  }

  /**
   * Replaces the weights by their averages so far and starts averaging anew from them: a second
   * training phase (global beam updates after greedy ones) then averages only its own weights, which
   * suit its decoding, while starting from what the first phase learnt.
   */
  restart(): void {
    this.average();
    this.clock = 1;
  }

  /** A perceptron whose weights are the mean of the given ones' (all of one shape): its scores are the mean of theirs. */
  static mean(perceptrons: readonly Perceptron[]): Perceptron {
    const first = perceptrons[0];
    if (!first) throw new FailedPreconditionError('Perceptron.mean needs at least one perceptron');
    if (perceptrons.some((p) => p.classes !== first.classes || p.bits !== first.bits))
      throw new FailedPreconditionError(`Perceptron.mean: every perceptron must have ${first.classes} classes and ${first.bits} bits`);
    const weights = new Float32Array(first.weights.length);
    for (const p of perceptrons) {
      const w = p.weights;
      for (let i = 0; i < weights.length; i++) weights[i]! += w[i]!;
    }
    for (let i = 0; i < weights.length; i++) weights[i]! /= perceptrons.length;
    return new Perceptron(first.classes, first.bits, weights);
  }

  /** A copy of the current averaged weights, leaving training state untouched (for dev checks between epochs). */
  averagedCopy(): Perceptron {
    const copy = new Perceptron(this.classes, this.bits, new Float32Array(this.weights));
    if (this.totals && this.stamps) {
      for (let i = 0; i < copy.weights.length; i++) {
        copy.weights[i] = (this.totals[i]! + (this.clock - this.stamps[i]!) * this.weights[i]!) / this.clock;
      }
    }
    return copy;
  }
}
