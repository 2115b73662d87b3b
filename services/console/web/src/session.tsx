// The signed-in session, read once at start and again after sign-in; every page reads it from here to know which
// buttons the user may press.
import { createContext, useContext } from 'react';
import { type Session } from './api.js';

export interface SessionState {
  readonly session: Session;
  /** Forgets the session here (after sign-out, or when the backend answers 401). */
  readonly signedOut: () => void;
}

export const SessionContext = createContext<SessionState | undefined>(undefined);

/** The session of the page; pages render only inside a signed-in layout, so it is always there. */
export function useSession(): SessionState {
  const state = useContext(SessionContext);
  if (state === undefined) throw new TypeError('useSession outside a signed-in page');
  return state;
}
