import { randomUUID } from 'node:crypto';
import { ValidationError } from '@loom/domain';
import { type ComponentContext, type ComponentFactory, type Emit, type Source } from '../runtime/component.js';

/** A source that emits `{ tick, time }` every `period` ms after `initial_delay` ms. */
export const timerFactory: ComponentFactory = {
  kind: 'source',
  // a bad option rejects the promise rather than throwing from create
  create: (context) => new Promise<Source>((resolve) => resolve(timerSource(context))),
};

function timerSource(context: ComponentContext): TimerSource {
  const period = context.options.integer('period');
  const initialDelay = context.options.integer('initial_delay');
  if (period < 1) throw ValidationError.of(`${context.name}.options.period`, 'must be at least 1 ms', 'OUT_OF_RANGE');
  if (initialDelay < 0) throw ValidationError.of(`${context.name}.options.initial_delay`, 'must not be negative', 'OUT_OF_RANGE');
  return new TimerSource(context, period, initialDelay);
}

class TimerSource implements Source {
  private timer: NodeJS.Timeout | undefined;
  private pending: Promise<void> | undefined;
  private stopped = false;
  private ticks = 0;
  /** When the next tick is due (epoch ms). */
  private due = 0;

  constructor(
    private readonly context: ComponentContext,
    private readonly period: number,
    private readonly initialDelay: number,
  ) {}

  start(emit: Emit): Promise<void> {
    this.due = Date.now() + this.initialDelay;
    this.schedule(emit, this.initialDelay);
    return Promise.resolve();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.pending;
  }

  private schedule(emit: Emit, delay: number): void {
    if (this.stopped || this.context.signal.aborted) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.pending = this.tick(emit);
    }, delay);
  }

  private async tick(emit: Emit): Promise<void> {
    this.ticks += 1;
    try {
      await emit({ id: randomUUID(), body: { tick: this.ticks, time: new Date().toISOString() }, headers: {} });
    } catch (error) {
      this.context.logger.warn({ component: this.context.name, tick: this.ticks, err: error }, 'timer tick was not accepted');
    }
    // the next tick is scheduled only once this one was accepted, so a slow workflow never piles ticks up;
    // when it was late, the next tick fires at once and those missed meanwhile are skipped, not caught up
    const now = Date.now();
    this.due += this.period;
    if (this.due < now) this.due = now;
    this.schedule(emit, this.due - now);
  }
}
