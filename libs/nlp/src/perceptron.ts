import { FailedPreconditionError } from '@loom/domain';

/** What every trainer of a perceptron model takes (the splitter, tagger, parser and NER tagger). */
export interface PerceptronTrainOptions {
  /** Passes over the training examples. */
  readonly epochs: number;
  /** Seed of the shuffling of the examples (and of the trainer's other random choices). */
  readonly seed: number;
  /** The weight table has 2^bits entries (more bits, fewer hash collisions). */
  readonly bits: number;
}

/**
 * A multi-class averaged perceptron over hashed features. Feature `f` owns the block of weights
 * `(f + c) & mask` for classes `c`, so scoring one feature reads one contiguous run of memory.
 */
export class Perceptron {
  readonly mask: number;
  readonly weights: Float32Array;
  /** While training: each weight's running total and the clock of its last change (for the averages). */
  private training: { readonly totals: Float64Array; readonly stamps: Int32Array } | undefined;
  private clock = 1;
  /** The sum of the weights score() reads ahead (see there); never used otherwise. */
  private touched = 0;

  constructor(
    readonly classes: number,
    readonly bits: number,
    weights?: Float32Array,
  ) {
    this.mask = (1 << bits) - 1;
    this.weights = weights ?? new Float32Array(1 << bits);
  }

  /**
   * Writes each class's score into `out` (length `classes`): per class, the float32 sum of the features'
   * weights in feature order, exactly as adding each feature's run into a Float32Array would give.
   */
  score(features: Int32Array, count: number, out: Float32Array): void {
    const mask = this.mask;
    const classes = this.classes;
    const weights = this.weights;
    let touched = 0;
    for (let index = 0; index < count; index++) {
      const base = features[index]! & mask;
      if (base + classes > mask) return this.scoreWrapping(features, count, out);
      // A run longer than a cache line (16 weights) has its later lines read here first: the kernels below read
      // them block by block, and read this way the lines' misses overlap instead of coming one after another.
      for (let ahead = 16; ahead < classes; ahead += 16) touched += weights[base + ahead]!;
      if (classes > 8) touched += weights[base + classes - 1]!;
    }
    // Kept, so that the reads above are not optimised away.
    this.touched = touched;
    // Classes in blocks held in locals, each feature's run read once per block: no store and reload of
    // `out` per weight, and the reads of a block are independent, so the memory they miss overlaps.
    let first = 0;
    for (; first + 8 <= classes; first += 8) scoreEight(this.weights, mask, features, count, first, out);
    if (first + 4 <= classes) {
      scoreFour(this.weights, mask, features, count, first, out);
      first += 4;
    }
    if (first < classes) scoreFew(this.weights, mask, features, count, first, classes - first, out);
  }

  /** score() for a feature whose run passes the end of the table and wraps to its start (rare). */
  private scoreWrapping(features: Int32Array, count: number, out: Float32Array): void {
    out.fill(0);
    const weights = this.weights;
    const mask = this.mask;
    const classes = this.classes;
    for (let index = 0; index < count; index++) {
      const base = features[index]! & mask;
      for (let classIndex = 0; classIndex < classes; classIndex++) out[classIndex]! += weights[(base + classIndex) & mask]!;
    }
  }

  /** Best class by score among those `allowed` (all when omitted). */
  static best(scores: Float32Array, allowed?: (classIndex: number) => boolean): number {
    let best = -1;
    let bestScore = -Infinity;
    for (let classIndex = 0; classIndex < scores.length; classIndex++) {
      if (allowed && !allowed(classIndex)) continue;
      if (scores[classIndex]! > bestScore) {
        bestScore = scores[classIndex]!;
        best = classIndex;
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
    const training = this.trainingState();
    for (let index = 0; index < count; index++) {
      const base = features[index]! & this.mask;
      this.bump(training, (base + gold) & this.mask, 1);
      this.bump(training, (base + guess) & this.mask, -1);
    }
  }

  /** Adds `delta` to class `target`'s weight of each feature (structured updates, where gold and guess read different features). */
  adjust(features: Int32Array, count: number, target: number, delta: number): void {
    const training = this.trainingState();
    for (let index = 0; index < count; index++) this.bump(training, ((features[index]! & this.mask) + target) & this.mask, delta);
  }

  /** The training state, created on the first update. */
  private trainingState(): { readonly totals: Float64Array; readonly stamps: Int32Array } {
    return (this.training ??= { totals: new Float64Array(this.weights.length), stamps: new Int32Array(this.weights.length) });
  }

  private bump({ totals, stamps }: { readonly totals: Float64Array; readonly stamps: Int32Array }, index: number, delta: number): void {
    totals[index]! += (this.clock - stamps[index]!) * this.weights[index]!;
    stamps[index] = this.clock;
    this.weights[index]! += delta;
  }

  /** Replaces the weights by their averages over all examples seen; training ends here. */
  average(): void {
    if (!this.training) return;
    const { totals, stamps } = this.training;
    const weights = this.weights;
    for (let index = 0; index < weights.length; index++) {
      const total = totals[index]! + (this.clock - stamps[index]!) * weights[index]!;
      weights[index] = total / this.clock;
    }
    this.training = undefined;
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
    if (perceptrons.some((perceptron) => perceptron.classes !== first.classes || perceptron.bits !== first.bits))
      throw new FailedPreconditionError(`Perceptron.mean: every perceptron must have ${first.classes} classes and ${first.bits} bits`);
    const weights = new Float32Array(first.weights.length);
    for (const perceptron of perceptrons) {
      const own = perceptron.weights;
      for (let index = 0; index < weights.length; index++) weights[index]! += own[index]!;
    }
    for (let index = 0; index < weights.length; index++) weights[index]! /= perceptrons.length;
    return new Perceptron(first.classes, first.bits, weights);
  }

  /** A copy of the current averaged weights, leaving training state untouched (for dev checks between epochs). */
  averagedCopy(): Perceptron {
    const copy = new Perceptron(this.classes, this.bits, new Float32Array(this.weights));
    if (this.training) {
      const { totals, stamps } = this.training;
      for (let index = 0; index < copy.weights.length; index++) {
        copy.weights[index] = (totals[index]! + (this.clock - stamps[index]!) * this.weights[index]!) / this.clock;
      }
    }
    return copy;
  }
}

// The kernels of Perceptron.score: Math.fround after each addition rounds as a Float32Array store does,
// so the sums are bit for bit those of adding into `out`. Callers ensure no run wraps past the mask.

/** Scores of classes first..first+7. */
function scoreEight(weights: Float32Array, mask: number, features: Int32Array, count: number, first: number, out: Float32Array): void {
  let s0 = 0;
  let s1 = 0;
  let s2 = 0;
  let s3 = 0;
  let s4 = 0;
  let s5 = 0;
  let s6 = 0;
  let s7 = 0;
  for (let index = 0; index < count; index++) {
    const base = (features[index]! & mask) + first;
    s0 = Math.fround(s0 + weights[base]!);
    s1 = Math.fround(s1 + weights[base + 1]!);
    s2 = Math.fround(s2 + weights[base + 2]!);
    s3 = Math.fround(s3 + weights[base + 3]!);
    s4 = Math.fround(s4 + weights[base + 4]!);
    s5 = Math.fround(s5 + weights[base + 5]!);
    s6 = Math.fround(s6 + weights[base + 6]!);
    s7 = Math.fround(s7 + weights[base + 7]!);
  }
  out[first] = s0;
  out[first + 1] = s1;
  out[first + 2] = s2;
  out[first + 3] = s3;
  out[first + 4] = s4;
  out[first + 5] = s5;
  out[first + 6] = s6;
  out[first + 7] = s7;
}

/** Scores of classes first..first+3. */
function scoreFour(weights: Float32Array, mask: number, features: Int32Array, count: number, first: number, out: Float32Array): void {
  let s0 = 0;
  let s1 = 0;
  let s2 = 0;
  let s3 = 0;
  for (let index = 0; index < count; index++) {
    const base = (features[index]! & mask) + first;
    s0 = Math.fround(s0 + weights[base]!);
    s1 = Math.fround(s1 + weights[base + 1]!);
    s2 = Math.fround(s2 + weights[base + 2]!);
    s3 = Math.fround(s3 + weights[base + 3]!);
  }
  out[first] = s0;
  out[first + 1] = s1;
  out[first + 2] = s2;
  out[first + 3] = s3;
}

/** Scores of the last one to three classes, from `first` (the parser's three transitions are all of them). */
function scoreFew(weights: Float32Array, mask: number, features: Int32Array, count: number, first: number, classes: number, out: Float32Array): void {
  if (classes !== 3) {
    for (let classIndex = first; classIndex < first + classes; classIndex++) {
      let sum = 0;
      for (let index = 0; index < count; index++) sum = Math.fround(sum + weights[(features[index]! & mask) + classIndex]!);
      out[classIndex] = sum;
    }
    return;
  }
  let s0 = 0;
  let s1 = 0;
  let s2 = 0;
  for (let index = 0; index < count; index++) {
    const base = (features[index]! & mask) + first;
    s0 = Math.fround(s0 + weights[base]!);
    s1 = Math.fround(s1 + weights[base + 1]!);
    s2 = Math.fround(s2 + weights[base + 2]!);
  }
  out[first] = s0;
  out[first + 1] = s1;
  out[first + 2] = s2;
}
