import { randomUUID } from 'node:crypto';
import { ValidationError } from '@loom/domain';
import { type Clock, keepAliveClock } from '@loom/foundation';
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
  return new TimerSource(context, context.clock ?? keepAliveClock, period, initialDelay);
}

class TimerSource implements Source {
  /** Aborts at stop: the wait for the next tick ends. */
  private readonly stopping = new AbortController();
  /** The loop of ticks, which ends once stopped (after the emit under way, if one is). */
  private ticking: Promise<void> | undefined;
  private ticks = 0;

  constructor(
    private readonly context: ComponentContext,
    private readonly clock: Clock,
    private readonly period: number,
    private readonly initialDelay: number,
  ) {}

  start(emit: Emit): Promise<void> {
    this.ticking ??= this.tick(emit);
    return Promise.resolve();
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    await this.ticking;
  }

  private async tick(emit: Emit): Promise<void> {
    const ended = AbortSignal.any([this.stopping.signal, this.context.signal]);
    /** When the next tick is due (epoch ms). */
    let due = this.clock.now().getTime() + this.initialDelay;
    for (;;) {
      await this.clock.sleepUntil(new Date(due), ended);
      if (ended.aborted) return;
      this.ticks += 1;
      try {
        await emit({ id: randomUUID(), body: { tick: this.ticks, time: this.clock.now().toISOString() }, headers: {} });
      } catch (error) {
        this.context.logger.warn({ component: this.context.name, tick: this.ticks, err: error }, 'timer tick was not accepted');
      }
      // the next tick waits until this one was accepted, so a slow workflow never piles ticks up; when it was late,
      // the next tick fires at once and those missed meanwhile are skipped, not caught up
      const now = this.clock.now().getTime();
      due = Math.max(due + this.period, now);
    }
  }
}
