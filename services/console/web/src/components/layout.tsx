// The frame of every signed-in page: a skip link, the navigation, who is signed in, and sign-out.
import { type ReactNode } from 'react';
import { NavLink, Outlet } from 'react-router';
import { signOut } from '../api.js';
import { useSession } from '../session.js';
import { ErrorNote, useAction } from './status.js';

const PAGES = [
  { to: '/workflows', label: 'Workflows' },
  { to: '/failures', label: 'Failed messages' },
  { to: '/audit', label: 'Audit' },
  { to: '/skills', label: 'Skills' },
  { to: '/schedules', label: 'Schedules' },
] as const;

export function Layout(): ReactNode {
  const { session, signedOut } = useSession();
  const action = useAction();
  return (
    <>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="top">
        <span className="brand">loom</span>
        <nav aria-label="Pages">
          <ul>
            {PAGES.map((page) => (
              <li key={page.to}>
                <NavLink to={page.to}>{page.label}</NavLink>
              </li>
            ))}
          </ul>
        </nav>
        <span className="who">
          {session.identity} <span className="muted">({session.roles.join(', ') || 'no role'})</span>
        </span>
        <button type="button" disabled={action.busy} onClick={() => action.run(() => signOut().then(signedOut))}>
          Sign out
        </button>
      </header>
      <ErrorNote error={action.error} />
      <main id="main" tabIndex={-1}>
        <Outlet />
      </main>
    </>
  );
}
