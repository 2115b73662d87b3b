// The audit log: filters by actor, action and time, a live tail of new entries, and the chain's verification (for a
// session that may administer).
import { type FormEvent, type ReactNode, useEffect, useState } from 'react';
import { may, query, request, streamError } from '../api.js';
import { ErrorNote, formatTime, Loading, shownName, text, useAction, useLoad } from '../components/status.js';
import { useSession } from '../session.js';
import { type AuditEntry, type VerifyResult } from '../types.js';

interface Filter {
  readonly actor: string;
  readonly action: string;
  readonly since: string;
  readonly until: string;
}

const NO_FILTER: Filter = { actor: '', action: '', since: '', until: '' };
/** Most tailed entries kept on the page. */
const TAIL_LIMIT = 200;

/** A datetime-local input's value as an ISO time for the backend. */
function iso(local: string): string | undefined {
  return local === '' ? undefined : new Date(local).toISOString();
}

function FilterForm({ onApply }: { onApply: (filter: Filter) => void }): ReactNode {
  const [filter, setFilter] = useState<Filter>(NO_FILTER);
  const submit = (event: FormEvent): void => {
    event.preventDefault();
    onApply(filter);
  };
  const field = (name: keyof Filter, label: string, type: string): ReactNode => (
    <label>
      {label}
      <input name={name} type={type} value={filter[name]} onChange={(event) => setFilter({ ...filter, [name]: event.target.value })} />
    </label>
  );
  return (
    <form className="filters" onSubmit={submit} aria-label="Filter the audit log">
      {field('actor', 'Actor', 'text')}
      {field('action', 'Action (e.g. WORKFLOW_START)', 'text')}
      {field('since', 'Since', 'datetime-local')}
      {field('until', 'Until', 'datetime-local')}
      <button type="submit">Filter</button>
    </form>
  );
}

function useTail(on: boolean): { entries: AuditEntry[]; error: unknown; following: boolean } {
  const { signedOut } = useSession();
  const [entries, setEntries] = useState<AuditEntry[]>([]);
  const [error, setError] = useState<unknown>();
  const [following, setFollowing] = useState(false);
  useEffect(() => {
    setFollowing(false);
    if (!on) return undefined;
    const events = new EventSource('/api/audit/events');
    // the stream is open once the server answered: entries appended from then on are shown
    events.onopen = () => setFollowing(true);
    const take = (event: MessageEvent<string>): void => {
      const entry = JSON.parse(event.data) as AuditEntry;
      setEntries((current) => [entry, ...current].slice(0, TAIL_LIMIT));
    };
    events.addEventListener('entry', take);
    events.addEventListener('signed-out', () => {
      events.close();
      signedOut();
    });
    events.onerror = (event) => {
      const sent = streamError(event);
      if (sent !== undefined) setError(sent);
      else if (events.readyState === EventSource.CLOSED) setError(new Error('the live tail stopped; turn it off and on to follow again'));
      setFollowing(events.readyState === EventSource.OPEN);
    };
    return () => events.close();
  }, [on, signedOut]);
  return { entries, error, following };
}

function Entries({ entries, label }: { entries: readonly AuditEntry[]; label: string }): ReactNode {
  return (
    <table>
      <caption className="visually-hidden">{label}</caption>
      <thead>
        <tr>
          <th scope="col">Time</th>
          <th scope="col">Actor</th>
          <th scope="col">Action</th>
          <th scope="col">Workflow</th>
          <th scope="col">Detail</th>
        </tr>
      </thead>
      <tbody>
        {entries.map((entry, index) => (
          <tr key={`${text(entry.sequence)}-${index}`} data-action={text(entry.action)}>
            <td>{formatTime(entry.time)}</td>
            <td>{text(entry.actor)}</td>
            <td>{text(entry.action)}</td>
            <td>
              {entry.workflow === undefined ? '—' : shownName(entry.workflow)}
              {entry.component === undefined ? null : ` / ${shownName(entry.component)}`}
            </td>
            <td>{[entry.reason, ...Object.entries(entry.attributes ?? {}).map(([name, value]) => `${name}=${value}`)].filter(Boolean).join(' · ') || '—'}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function AuditPage(): ReactNode {
  const { session } = useSession();
  const [filter, setFilter] = useState<Filter>(NO_FILTER);
  const [tailing, setTailing] = useState(false);
  const [verified, setVerified] = useState<VerifyResult>();
  const log = useLoad(
    () =>
      request<{ entries: AuditEntry[] }>(
        'GET',
        `/api/audit${query({ actor: filter.actor, action: filter.action, since: iso(filter.since), until: iso(filter.until) })}`,
      ),
    [filter],
  );
  const tail = useTail(tailing);
  const verify = useAction();
  return (
    <>
      <h1>Audit</h1>
      <FilterForm onApply={setFilter} />
      <div className="actions">
        <label className="inline">
          <input type="checkbox" checked={tailing} onChange={(event) => setTailing(event.target.checked)} />
          Live tail
        </label>
        {may(session, 'administer') ? (
          <button type="button" disabled={verify.busy} onClick={() => verify.run(() => request<VerifyResult>('POST', '/api/audit/verify').then(setVerified))}>
            Verify the chain
          </button>
        ) : null}
        <span role="status">
          {verified === undefined
            ? null
            : verified.ok
              ? `The chain holds: ${verified.checked} entries checked.`
              : `The chain is broken at entry ${text(verified.brokenAt)}: ${text(verified.problem)} (${verified.checked} entries checked).`}
        </span>
      </div>
      <ErrorNote error={verify.error} />
      <ErrorNote error={tail.error} />
      {tailing ? (
        <section aria-labelledby="tail-title">
          <h2 id="tail-title">New entries</h2>
          <p className="muted" role="status">
            {tail.following ? 'Following new entries as they are appended.' : 'Connecting to the live tail…'}
          </p>
          {tail.entries.length === 0 ? null : <Entries entries={tail.entries} label="New audit entries" />}
        </section>
      ) : null}
      <ErrorNote error={log.error} />
      {log.value === undefined ? (
        log.error === undefined ? (
          <Loading what="the audit log" />
        ) : null
      ) : log.value.entries.length === 0 ? (
        <p>No entries match.</p>
      ) : (
        <Entries entries={log.value.entries} label="Audit entries" />
      )}
    </>
  );
}
