// The state of the arc-hybrid parser (parser.ts): its stack, buffer and the arcs built so far.

export const NONE = -1;
/** Labels 0..31 of a word's dependents are bits of one 32-bit set, labels 32..63 of a second. */
const LABEL_SET_BITS = 32;
/** Number of Int32Array views a State keeps in its one buffer. */
const STATE_ARRAYS = 13;
export const NULL_LABEL = -1;
export const SHIFT = 0;
export const LEFT = 1;

/** Parser state over a sentence of n words (1..n) with the root 0. */
export class State {
  readonly wordCount: number;
  readonly stack: Int32Array;
  stackSize = 0;
  bufferFront = 1;
  readonly heads: Int32Array;
  readonly labels: Int32Array;
  readonly leftmostChild: Int32Array;
  readonly secondLeftmostChild: Int32Array;
  readonly rightmostChild: Int32Array;
  readonly secondRightmostChild: Int32Array;
  readonly leftValency: Int32Array;
  readonly rightValency: Int32Array;
  readonly leftSetLo: Int32Array;
  readonly leftSetHi: Int32Array;
  readonly rightSetLo: Int32Array;
  readonly rightSetHi: Int32Array;

  /** All the arrays above are views of this one buffer, so copying a state is one copy. */
  private readonly buffer: Int32Array;

  constructor(wordCount: number) {
    this.wordCount = wordCount;
    const size = wordCount + 1;
    this.buffer = new Int32Array(STATE_ARRAYS * size);
    const view = (part: number): Int32Array => this.buffer.subarray(part * size, (part + 1) * size);
    this.stack = view(0);
    this.heads = view(1);
    this.labels = view(2);
    this.leftmostChild = view(3);
    this.secondLeftmostChild = view(4);
    this.rightmostChild = view(5);
    this.secondRightmostChild = view(6);
    this.leftValency = view(7);
    this.rightValency = view(8);
    this.leftSetLo = view(9);
    this.leftSetHi = view(10);
    this.rightSetLo = view(11);
    this.rightSetHi = view(12);
    // heads, labels and the four nearest-child arrays start as NONE
    this.buffer.fill(NONE, size, 7 * size);
    this.stack[0] = 0;
    this.stackSize = 1;
  }

  /** Becomes a copy of `o` (a state of the same sentence), so beam items reuse their arrays. */
  copyFrom(other: State): void {
    this.stackSize = other.stackSize;
    this.bufferFront = other.bufferFront;
    this.buffer.set(other.buffer);
  }

  stackItem(depth: number): number {
    return this.stackSize - 1 - depth >= 0 ? this.stack[this.stackSize - 1 - depth]! : NONE;
  }

  bufferItem(offset: number): number {
    return this.bufferFront + offset <= this.wordCount ? this.bufferFront + offset : NONE;
  }

  terminal(): boolean {
    return this.bufferFront > this.wordCount && this.stackSize === 1;
  }

  attach(head: number, child: number, label: number): void {
    this.heads[child] = head;
    this.labels[child] = label;
    const bit = label & (LABEL_SET_BITS - 1);
    if (child < head) {
      this.leftValency[head]!++;
      if (label < LABEL_SET_BITS) this.leftSetLo[head]! |= 1 << bit;
      else this.leftSetHi[head]! |= 1 << bit;
      if (this.leftmostChild[head] === NONE || child < this.leftmostChild[head]!) {
        this.secondLeftmostChild[head] = this.leftmostChild[head]!;
        this.leftmostChild[head] = child;
      } else if (this.secondLeftmostChild[head] === NONE || child < this.secondLeftmostChild[head]!) this.secondLeftmostChild[head] = child;
    } else {
      this.rightValency[head]!++;
      if (label < LABEL_SET_BITS) this.rightSetLo[head]! |= 1 << bit;
      else this.rightSetHi[head]! |= 1 << bit;
      if (this.rightmostChild[head] === NONE || child > this.rightmostChild[head]!) {
        this.secondRightmostChild[head] = this.rightmostChild[head]!;
        this.rightmostChild[head] = child;
      } else if (this.secondRightmostChild[head] === NONE || child > this.secondRightmostChild[head]!) this.secondRightmostChild[head] = child;
    }
  }

  apply(action: number, label: number): void {
    if (action === SHIFT) {
      this.stack[this.stackSize++] = this.bufferFront++;
    } else if (action === LEFT) {
      const s0 = this.stack[--this.stackSize]!;
      this.attach(this.bufferFront, s0, label);
    } else {
      const s0 = this.stack[--this.stackSize]!;
      this.attach(this.stack[this.stackSize - 1]!, s0, label);
    }
  }

  /** The head the arc of transition `action` (LEFT or RIGHT) gives s0: b0 for a left arc, s1 for a right one. */
  arcHead(action: number): number {
    return action === LEFT ? this.bufferFront : this.stackItem(1);
  }

  canShift(): boolean {
    return this.bufferFront <= this.wordCount;
  }

  canLeft(): boolean {
    return this.stackSize > 1 && this.bufferFront <= this.wordCount;
  }

  canRight(): boolean {
    // The root takes its one dependent only once the buffer is empty.
    return this.stackSize > 2 || (this.stackSize === 2 && this.bufferFront > this.wordCount);
  }
}

/** Whether transition `action` (SHIFT, LEFT or right) is legal in the state. */
export function legal(state: State, action: number): boolean {
  if (action === SHIFT) return state.canShift();
  if (action === LEFT) return state.canLeft();
  return state.canRight();
}
