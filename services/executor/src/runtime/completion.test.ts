import { describe, expect, it } from 'vitest';
import { type Settlement } from '@loom/messaging';
import { type CompletionTicket, Completions } from './completion.js';

/** A ticket whose delivery writes down how it was settled (terminated with the run's reason). */
function recorded(completions: Completions, journal: string[], name: string): CompletionTicket {
  const settlement: Settlement = {
    ack: () => journal.push(`ack ${name}`),
    term: (reason) => journal.push(`term ${name}: ${reason}`),
    nak: () => journal.push(`nak ${name}`),
    working: () => journal.push(`working ${name}`),
  };
  return completions.ticket(settlement, (reason) => settlement.term(reason));
}

describe('completion tickets', () => {
  it('acknowledges a fanned-out delivery only once every copy was written', () => {
    const journal: string[] = [];
    const completions = new Completions();
    const ticket = recorded(completions, journal, 'm1');
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
    const filtered = recorded(completions, journal, 'filtered');
    filtered.hold();
    filtered.release();
    // the filter emits nothing: its copy is released
    filtered.release();
    const split = recorded(completions, journal, 'split');
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
    const ticket = recorded(new Completions(), journal, 'm');
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
    const ticket = recorded(new Completions(), journal, 'm');
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
    recorded(completions, journal, 'done').release();
    const waiting = recorded(completions, journal, 'waiting');
    expect(completions.touchAll()).toBe(1);
    waiting.release();
    expect(completions.touchAll()).toBe(0);
    expect(journal).toEqual(['ack done', 'working waiting', 'ack waiting']);
  });

  it('abandons the deliveries still open when the run stops: each is nak’d once, and later releases change nothing', () => {
    const journal: string[] = [];
    const completions = new Completions();
    const done = recorded(completions, journal, 'done');
    done.release();
    const waiting = recorded(completions, journal, 'waiting');
    waiting.hold();
    waiting.release();
    const entering = recorded(completions, journal, 'entering');
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
