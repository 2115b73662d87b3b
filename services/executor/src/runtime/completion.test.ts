import { describe, expect, it } from 'vitest';
import { Completions, type Settlement } from './completion.js';

/** A settlement that writes down how each delivery was settled. */
function recorded(journal: string[], name: string): Settlement {
  return {
    ack: () => journal.push(`ack ${name}`),
    term: (reason) => journal.push(`term ${name}: ${reason}`),
    nak: () => journal.push(`nak ${name}`),
    working: () => journal.push(`working ${name}`),
  };
}

describe('completion tickets', () => {
  it('acknowledges a fanned-out delivery only once every copy was written', () => {
    const journal: string[] = [];
    const completions = new Completions();
    const ticket = completions.ticket(recorded(journal, 'm1'));
    // forwarded to two sinks, then the delivery's own hold is released
    ticket.hold();
    ticket.hold();
    ticket.release();
    journal.push('first sink wrote');
    ticket.release();
    journal.push('second sink wrote');
    ticket.release();
    expect(journal).toEqual(['first sink wrote', 'second sink wrote', 'ack m1']);
    expect(ticket.state).toBe('acknowledged');
    expect(completions.size).toBe(0);
  });

  it('acknowledges a delivery filtered out, and one whose processor emitted several outputs once each is written', () => {
    const journal: string[] = [];
    const completions = new Completions();
    const filtered = completions.ticket(recorded(journal, 'filtered'));
    filtered.hold();
    filtered.release();
    // the filter emits nothing: its copy is released
    filtered.release();
    const split = completions.ticket(recorded(journal, 'split'));
    split.hold();
    split.release();
    // the script emits two outputs (each queued, each held), then its own copy is released
    split.hold();
    split.hold();
    split.release();
    journal.push('one output written');
    split.release();
    journal.push('other output written');
    split.release();
    expect(journal).toEqual(['ack filtered', 'one output written', 'other output written', 'ack split']);
  });

  it('acknowledges a delivery handed to the failure handler once the handler is done with it', () => {
    const journal: string[] = [];
    const ticket = new Completions().ticket(recorded(journal, 'm'));
    ticket.hold();
    ticket.release();
    // the processor failed past max_retry: the failure handler's message holds the ticket, the failed copy is released
    ticket.hold();
    ticket.release();
    journal.push('handler wrote');
    ticket.release();
    expect(journal).toEqual(['handler wrote', 'ack m']);
  });

  it('terminates a delivery a branch failed past its retries with no failure handler, once the other branches are done', () => {
    const journal: string[] = [];
    const ticket = new Completions().ticket(recorded(journal, 'm'));
    ticket.hold();
    ticket.hold();
    ticket.release();
    ticket.fail('work: refused (no failure handler)');
    ticket.release();
    journal.push('other branch written');
    ticket.release();
    expect(journal).toEqual(['other branch written', 'term m: work: refused (no failure handler)']);
    expect(ticket.state).toBe('terminated');
  });

  it('tells JetStream the open deliveries are still being worked on, and says nothing of settled ones', () => {
    const journal: string[] = [];
    const completions = new Completions();
    completions.ticket(recorded(journal, 'done')).release();
    const waiting = completions.ticket(recorded(journal, 'waiting'));
    completions.touchAll();
    waiting.release();
    completions.touchAll();
    expect(journal).toEqual(['ack done', 'working waiting', 'ack waiting']);
  });

  it('abandons the deliveries still open when the run stops: each is nak’d once, and later releases change nothing', () => {
    const journal: string[] = [];
    const completions = new Completions();
    const done = completions.ticket(recorded(journal, 'done'));
    done.release();
    const waiting = completions.ticket(recorded(journal, 'waiting'));
    waiting.hold();
    waiting.release();
    const entering = completions.ticket(recorded(journal, 'entering'));
    expect(completions.size).toBe(2);
    expect(completions.abandonAll()).toBe(2);
    waiting.release();
    entering.release();
    entering.abandon();
    expect(journal).toEqual(['ack done', 'nak waiting', 'nak entering']);
    expect(completions.size).toBe(0);
    expect(completions.abandonAll()).toBe(0);
  });
});
