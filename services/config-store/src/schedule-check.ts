import { ValidationError, type Schedule } from '@loom/domain';
import { Cron } from 'croner';

/**
 * Checks what the schedule's shape cannot: the cron expression has six fields (seconds first) that croner accepts, and
 * the time zone is an IANA zone. Each problem is a violation of `schedule.cron` or `schedule.timezone`.
 */
export function checkSchedule(schedule: Schedule): Schedule {
  const violations = [];
  const fields = schedule.cron.trim().split(/\s+/);
  if (fields.length !== 6) {
    violations.push({
      field: 'schedule.cron',
      description: `needs six fields, seconds first (e.g. '0 */5 * * * *'), not ${fields.length}`,
      reason: 'INVALID_CRON',
    });
  } else {
    const problem = cronProblem(schedule.cron, 'UTC');
    if (problem !== undefined) violations.push({ field: 'schedule.cron', description: problem, reason: 'INVALID_CRON' });
  }
  if (!isTimeZone(schedule.timezone)) {
    violations.push({
      field: 'schedule.timezone',
      description: `'${schedule.timezone}' is not an IANA time zone (e.g. Europe/Berlin)`,
      reason: 'INVALID_TIME_ZONE',
    });
  }
  if (violations.length > 0) throw new ValidationError(violations);
  return schedule;
}

function cronProblem(pattern: string, timezone: string): string | undefined {
  try {
    const job = new Cron(pattern, { timezone, paused: true });
    const next = job.nextRun();
    job.stop();
    return next === null ? 'never fires' : undefined;
  } catch (error) {
    return error instanceof Error ? error.message.replace(/^CronPattern: /, '') : String(error);
  }
}

function isTimeZone(zone: string): boolean {
  if (zone.trim() === '') return false;
  try {
    new Intl.DateTimeFormat('en', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}
