import { type ComponentStatus } from '@loom/contracts';
import { describe, expect, it } from 'vitest';
import { RateTracker } from './workflow-views.js';

function status(name: string, messagesIn: number, messagesFailed = 0): ComponentStatus {
  return { name, messagesIn, messagesOut: messagesIn - messagesFailed, messagesFailed, messagesRetried: 0, queueDepth: 0, lastError: '' };
}

const ends = { entries: new Set(['In']), exits: new Set(['Done']) };

describe('RateTracker', () => {
  it('answers messages a minute from the change of the totals over the last minute, 0 at the first look', () => {
    let now = 0;
    const rates = new RateTracker(() => now);
    expect(rates.record('w', [status('In', 100), status('Check', 100, 4), status('Done', 96)], ends)).toEqual({ in: 0, out: 0, failed: 0 });
    now = 30_000;
    // in 30 s: 50 more in, 48 more through Done, 2 more failed at Check
    expect(rates.record('w', [status('In', 150), status('Check', 150, 6), status('Done', 144)], ends)).toEqual({ in: 100, out: 96, failed: 4 });
    now = 100_000;
    // the first sample is past the minute: the rate is taken from the one at 30 s
    expect(rates.record('w', [status('In', 220), status('Check', 220, 6), status('Done', 214)], ends)).toEqual({ in: 60, out: 60, failed: 0 });
  });

  it('never answers a negative rate when counters start again (a new run), and forgets workflows that are gone', () => {
    let now = 0;
    const rates = new RateTracker(() => now);
    rates.record('w', [status('In', 500), status('Done', 500)], ends);
    now = 10_000;
    expect(rates.record('w', [status('In', 5), status('Done', 5)], ends)).toEqual({ in: 0, out: 0, failed: 0 });
    rates.retain(new Set());
    now = 20_000;
    expect(rates.record('w', [status('In', 50), status('Done', 50)], ends)).toEqual({ in: 0, out: 0, failed: 0 });
  });
});
