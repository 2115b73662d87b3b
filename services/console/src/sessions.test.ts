import { describe, expect, it } from 'vitest';
import { csrfMatches, SessionStore } from './sessions.js';

const owner = { identity: 'ops', roles: ['operator'], permissions: ['read', 'operate'], token: 'secret-token' };

/** A store on a clock the test moves. */
function storeAt(start = 1_000_000): { store: SessionStore; move: (ms: number) => void } {
  let now = start;
  return { store: new SessionStore({ idleTimeoutMs: 1000, maxAgeMs: 5000, now: () => now }), move: (ms) => (now += ms) };
}

describe('SessionStore', () => {
  it('gives each session a random id and CSRF token, and finds it by its id only', () => {
    const { store } = storeAt();
    const first = store.create(owner);
    const second = store.create(owner);
    expect(first.id).toMatch(/^[\w-]{43}$/);
    expect(first.id).not.toBe(second.id);
    expect(first.csrfToken).not.toBe(first.id);
    expect(store.get(first.id)?.identity).toBe('ops');
    expect(store.get('not-a-session')).toBeUndefined();
    expect(store.get(undefined)).toBeUndefined();
  });

  it('ends a session unused past the idle timeout, one past its maximum age however used, and one whose token expired', () => {
    const { store, move } = storeAt();
    const idle = store.create(owner);
    const busy = store.create(owner);
    const expiring = store.create({ ...owner, tokenExpiresAt: 1_000_000 + 700 });
    move(600);
    expect(store.get(busy.id)).toBeDefined();
    move(600);
    expect(store.get(idle.id)).toBeUndefined();
    expect(store.get(expiring.id)).toBeUndefined();
    expect(store.get(busy.id)).toBeDefined();
    for (let step = 0; step < 6; step++) {
      move(700);
      if (step < 4) expect(store.get(busy.id), `step ${step}`).toBeDefined();
    }
    expect(store.get(busy.id)).toBeUndefined();
  });

  it('ends a session on delete; compares CSRF tokens exactly', () => {
    const { store } = storeAt();
    const session = store.create(owner);
    expect(csrfMatches(session, session.csrfToken)).toBe(true);
    expect(csrfMatches(session, `${session.csrfToken}x`)).toBe(false);
    expect(csrfMatches(session, undefined)).toBe(false);
    store.delete(session.id);
    expect(store.get(session.id)).toBeUndefined();
  });
});
