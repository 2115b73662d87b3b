// Sign-in: an operator token (sent once in a request body; the server keeps it in the session) or the identity
// provider (the server's /auth/login, authorization code with PKCE).
import { type FormEvent, type ReactNode, useEffect, useState } from 'react';
import { type Session, signInAnonymously, signInOptions, signInWithToken } from '../api.js';
import { ErrorNote, useAction } from '../components/status.js';

export function SignIn({ onSignedIn, notice }: { onSignedIn: (session: Session) => void; notice?: string }): ReactNode {
  const [token, setToken] = useState('');
  // loom.auth.allowAnonymous (the development config): the API takes calls without a token, and so does the console
  const [anonymous, setAnonymous] = useState(false);
  useEffect(() => {
    signInOptions().then(
      (options) => setAnonymous(options.anonymous),
      () => setAnonymous(false),
    );
  }, []);
  const action = useAction();
  const submit = (event: FormEvent): void => {
    event.preventDefault();
    action.run(() => signInWithToken(token).then(onSignedIn));
  };
  return (
    <main id="main" className="sign-in">
      <h1>Sign in to loom</h1>
      {notice === undefined ? null : (
        <p className="notice" role="status">
          {notice}
        </p>
      )}
      <form onSubmit={submit}>
        <label htmlFor="token">Operator token</label>
        <input id="token" name="token" type="password" autoComplete="off" required value={token} onChange={(event) => setToken(event.target.value)} />
        <button type="submit" disabled={action.busy || token === ''}>
          Sign in with the token
        </button>
      </form>
      <ErrorNote error={action.error} />
      <p className="or">or</p>
      <a className="button" href="/auth/login">
        Sign in with the identity provider
      </a>
      {anonymous ? (
        <button type="button" disabled={action.busy} onClick={() => action.run(() => signInAnonymously().then(onSignedIn))}>
          Continue without a token
        </button>
      ) : null}
    </main>
  );
}
