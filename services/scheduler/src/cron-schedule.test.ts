import { describe, expect, it } from 'vitest';
import { CronSchedule } from './cron-schedule.js';
import { InvalidScheduleError } from './errors.js';

const at = (text: string): Date => new Date(text);
const schedule = (cron: string, timezone = 'Europe/Berlin') => CronSchedule.of({ enabled: true, cron, timezone, overlap: 'SKIP', catchUp: 'NONE' });

describe('CronSchedule', () => {
  it('gives the next fire strictly after an instant, in the time zone', () => {
    const daily = schedule('0 0 9 * * *');
    expect(daily.next(at('2026-01-15T07:59:59Z'))?.toISOString()).toBe('2026-01-15T08:00:00.000Z'); // 09:00 CET
    expect(daily.next(at('2026-01-15T08:00:00Z'))?.toISOString()).toBe('2026-01-16T08:00:00.000Z');
    expect(daily.next(at('2026-07-15T06:00:00Z'))?.toISOString()).toBe('2026-07-15T07:00:00.000Z'); // 09:00 CEST
  });

  it('lists missed fires in (after, until], the latest ones when capped', () => {
    const everyTen = schedule('*/10 * * * * *', 'UTC');
    const missed = everyTen.between(at('2026-01-01T00:00:00Z'), at('2026-01-01T00:00:50Z'), 100);
    expect(missed.fires.map((fire) => fire.toISOString().slice(17, 19))).toEqual(['10', '20', '30', '40', '50']);
    expect(missed.truncated).toBe(false);
    const capped = everyTen.between(at('2026-01-01T00:00:00Z'), at('2026-01-01T00:00:50Z'), 2);
    expect(capped.fires.map((fire) => fire.toISOString().slice(17, 19))).toEqual(['40', '50']);
    expect(capped.truncated).toBe(true);
    expect(everyTen.between(at('2026-01-01T00:00:50Z'), at('2026-01-01T00:00:50Z'), 5).fires).toEqual([]);
  });

  it('keeps DST in the zone: a missed 02:30 on the spring-forward night is 03:00 CEST', () => {
    const missed = schedule('0 30 2 * * *').between(at('2026-03-28T12:00:00Z'), at('2026-03-30T12:00:00Z'), 10);
    expect(missed.fires.map((fire) => fire.toISOString())).toEqual(['2026-03-29T01:00:00.000Z', '2026-03-30T00:30:00.000Z']);
  });

  it.each([
    ['*/5 * * * *', 'Europe/Berlin', /six fields/],
    ['61 * * * * *', 'Europe/Berlin', /second/],
    ['0 0 0 * * *', 'Mars/Olympus', /Mars\/Olympus/],
    ['0 0 0 30 2 *', 'UTC', /never fires/],
  ])('refuses %s in %s', (cron, timezone, problem) => {
    expect(() => schedule(cron, timezone)).toThrow(InvalidScheduleError);
    expect(() => schedule(cron, timezone)).toThrow(problem);
  });
});
