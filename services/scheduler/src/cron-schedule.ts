import { type Schedule } from '@loom/domain';
import { Cron } from 'croner';
import { InvalidScheduleError } from './errors.js';

/** Missed fires of a schedule: the latest ones, oldest first, and whether older ones were left out. */
export interface MissedFires {
  readonly fires: Date[];
  readonly truncated: boolean;
}

/**
 * A schedule's cron expression (six fields, seconds first) in its IANA time zone. Fire times come from croner, which
 * handles DST as Vixie cron does: a fixed-time job (one value in each of seconds, minutes and hours) that falls into
 * the spring-forward gap fires at the first valid time after it, and once when its time occurs twice in autumn; an
 * interval job skips the gap and fires at both occurrences of a repeated time.
 */
export class CronSchedule {
  private constructor(
    readonly schedule: Schedule,
    private readonly cron: Cron,
  ) {}

  /** Parses a stored schedule; throws InvalidScheduleError when it cannot run. */
  static of(schedule: Schedule): CronSchedule {
    const fields = schedule.cron.trim().split(/\s+/);
    if (fields.length !== 6) throw new InvalidScheduleError(schedule.cron, schedule.timezone, `needs six fields, seconds first, not ${fields.length}`);
    let cron: Cron;
    try {
      new Intl.DateTimeFormat('en', { timeZone: schedule.timezone });
      cron = new Cron(schedule.cron, { timezone: schedule.timezone, paused: true, mode: '6-part' });
    } catch (error) {
      const problem = error instanceof Error ? error.message.replace(/^CronPattern: /, '') : String(error);
      throw new InvalidScheduleError(schedule.cron, schedule.timezone, problem);
    }
    if (cron.nextRun(new Date(0)) === null) throw new InvalidScheduleError(schedule.cron, schedule.timezone, 'it never fires');
    return new CronSchedule(schedule, cron);
  }

  /** The first fire strictly after `instant`, or undefined when there is none. */
  next(instant: Date): Date | undefined {
    return this.cron.nextRun(instant) ?? undefined;
  }

  /** The fires in (after, until], at most `max` of them (the latest), oldest first. */
  between(after: Date, until: Date, max: number): MissedFires {
    if (until.getTime() <= after.getTime() || max < 1) return { fires: [], truncated: false };
    // croner's previousRuns excludes the reference itself; a millisecond later includes a fire exactly at `until`
    const latest = this.cron.previousRuns(max + 1, new Date(until.getTime() + 1)).filter((fire) => fire.getTime() > after.getTime());
    const truncated = latest.length > max;
    return { fires: latest.slice(0, max).reverse(), truncated };
  }
}
