// How a page shows what it is waiting for and what went wrong: in place, in a live region, never a blank page.
import { type ReactNode, useCallback, useEffect, useState } from 'react';
import { ApiError } from '../api.js';

/** An error in place: the backend's status and message, and the field it names. */
export function ErrorNote({ error }: { error: unknown }): ReactNode {
  if (error === undefined) return null;
  const message =
    error instanceof ApiError
      ? `${error.status === 0 ? 'No answer' : `Error ${error.status}`}: ${error.message}${error.field === undefined ? '' : ` (field ${error.field})`}`
      : error instanceof Error
        ? error.message
        : text(error);
  return (
    <p className="error" role="alert">
      {message}
    </p>
  );
}

/** What a load hook answers: the value once loaded, the last error, and a way to load again. */
export interface Loaded<T> {
  readonly value: T | undefined;
  readonly error: unknown;
  readonly loading: boolean;
  readonly reload: () => void;
}

/** Loads `load()` when its dependencies change (and every `everyMs` when set); keeps the last value on an error. */
export function useLoad<T>(load: () => Promise<T>, dependencies: readonly unknown[], everyMs?: number): Loaded<T> {
  const [value, setValue] = useState<T>();
  const [error, setError] = useState<unknown>();
  const [loading, setLoading] = useState(true);
  const [round, setRound] = useState(0);
  const reload = useCallback(() => setRound((n) => n + 1), []);
  useEffect(() => {
    let current = true;
    setLoading(true);
    load()
      .then((loaded) => {
        if (!current) return;
        setValue(loaded);
        setError(undefined);
      })
      .catch((failure: unknown) => current && setError(failure))
      .finally(() => current && setLoading(false));
    return () => {
      current = false;
    };
    // the caller names what the load depends on, as with useEffect
  }, [...dependencies, round]);
  useEffect(() => {
    if (everyMs === undefined) return undefined;
    const timer = setInterval(reload, everyMs);
    return () => clearInterval(timer);
  }, [everyMs, reload]);
  return { value, error, loading, reload };
}

/** A short line while the first answer is on its way. */
export function Loading({ what }: { what: string }): ReactNode {
  return (
    <p className="muted" role="status">
      Loading {what}…
    </p>
  );
}

/** Runs an action once at a time, keeping its error for the page to show beside the button. */
export function useAction(): {
  readonly busy: boolean;
  readonly error: unknown;
  readonly run: (action: () => Promise<unknown>) => void;
} {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const run = useCallback((action: () => Promise<unknown>) => {
    setBusy(true);
    setError(undefined);
    action()
      .catch((failure: unknown) => setError(failure))
      .finally(() => setBusy(false));
  }, []);
  return { busy, error, run };
}

/** A time from the backend (ISO text or milliseconds) in the reader's locale; a dash when absent. */
export function formatTime(value: unknown): string {
  if (value === undefined || value === null || value === '') return '—';
  if (typeof value !== 'number' && typeof value !== 'string') return text(value);
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? String(value) : date.toLocaleString();
}

/** Any value as short text for a table cell. */
export function text(value: unknown): string {
  if (value === undefined || value === null || value === '') return '—';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

/** A stored name `<name>_<uuid>` as people read it, `<name>` (the uuid tells stored instances apart, not people). */
export function shownName(name: string): string {
  return name.replace(/_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, '');
}
