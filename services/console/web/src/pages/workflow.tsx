// One workflow: its picture with live counts (server-sent events from WatchRun), its actions, its compact file with
// a copy button, the resources and skills it uses, and its version history when there is one.
import { type ReactNode, useEffect, useState } from 'react';
import { useParams } from 'react-router';
import { ApiError, currentSession, request, segment, streamError } from '../api.js';
import { ErrorNote, Loading, text, useAction, useLoad } from '../components/status.js';
import { WorkflowActions } from '../components/workflow-actions.js';
import { WorkflowGraph } from '../components/workflow-graph.js';
import { useSession } from '../session.js';
import { type CountsEvent, type WorkflowDetail } from '../types.js';

/** The counts event stream of a workflow: the latest event, and an error once the stream is lost for good. */
function useCounts(name: string): { counts: CountsEvent | undefined; error: unknown } {
  const { signedOut } = useSession();
  const [counts, setCounts] = useState<CountsEvent>();
  const [error, setError] = useState<unknown>();
  useEffect(() => {
    const events = new EventSource(`/api/workflows/${segment(name)}/events`);
    events.addEventListener('counts', (event: MessageEvent<string>) => {
      setCounts(JSON.parse(event.data) as CountsEvent);
      setError(undefined);
    });
    events.addEventListener('signed-out', () => {
      events.close();
      signedOut();
    });
    events.onerror = (event) => {
      // an `error` event the server sent (the run cannot be watched) carries the API's error
      const sent = streamError(event);
      if (sent !== undefined) {
        setError(sent);
        return;
      }
      // EventSource reconnects by itself unless the answer was an error status; then it is closed: find out why
      if (events.readyState !== EventSource.CLOSED) return;
      currentSession()
        .then((session) => {
          if (session === undefined) signedOut();
          else setError(new ApiError(0, 'the live counts stopped; reload the page to follow them again'));
        })
        .catch((failure: unknown) => setError(failure));
    };
    return () => events.close();
  }, [name, signedOut]);
  return { counts, error };
}

function CopyButton({ value }: { value: string }): ReactNode {
  const action = useAction();
  const [copied, setCopied] = useState(false);
  return (
    <>
      <button
        type="button"
        onClick={() =>
          action.run(async () => {
            await navigator.clipboard.writeText(value);
            setCopied(true);
          })
        }
      >
        Copy the file
      </button>
      <span role="status" className="muted">
        {copied ? ' Copied.' : ''}
      </span>
      <ErrorNote error={action.error} />
    </>
  );
}

/** A resource (`name (kind), used by a, b`), a skill (`name at url, by component`) or a history entry, as one line. */
function describeItem(item: unknown): string {
  if (typeof item !== 'object' || item === null) return text(item);
  const fields = item as Record<string, unknown>;
  if (Array.isArray(fields.usedBy)) return `${text(fields.name)} (${text(fields.kind)}), used by ${fields.usedBy.map(text).join(', ')}`;
  if (typeof fields.url === 'string') {
    // a skill named without an address is found in the gateway's registry by its name
    const where = fields.url === '' ? ' (registered)' : ` at ${fields.url}`;
    return `${text(fields.name)}${where}${fields.component === undefined ? '' : `, used by ${text(fields.component)}`}`;
  }
  if (fields.version !== undefined)
    return `version ${text(fields.version)}${fields.updatedAt === undefined ? '' : `, ${text(fields.updatedAt)}`}${fields.pushedBy === undefined ? '' : ` by ${text(fields.pushedBy)}`}`;
  return text(item);
}

function List({ title, items }: { title: string; items: readonly unknown[] | undefined }): ReactNode {
  return (
    <section aria-labelledby={`${title}-title`}>
      <h2 id={`${title}-title`}>{title[0]?.toUpperCase() + title.slice(1)}</h2>
      {items === undefined || items.length === 0 ? (
        <p className="muted">None.</p>
      ) : (
        <ul>
          {items.map((item, index) => (
            <li key={index}>{describeItem(item)}</li>
          ))}
        </ul>
      )}
    </section>
  );
}

export function WorkflowPage(): ReactNode {
  const name = useParams().name ?? '';
  const detail = useLoad(() => request<WorkflowDetail>('GET', `/api/workflows/${segment(name)}`), [name]);
  const live = useCounts(name);
  const workflow = detail.value;
  const counts = live.counts ?? workflow?.counts;
  const state = counts?.state ?? workflow?.state ?? 'UNKNOWN';
  return (
    <>
      <h1>{workflow?.title ?? name}</h1>
      <ErrorNote error={detail.error} />
      {workflow === undefined ? (
        detail.error === undefined ? (
          <Loading what="the workflow" />
        ) : null
      ) : (
        <>
          <p>
            Version {workflow.version} · state{' '}
            <span className={`state state-${state.toLowerCase()}`} data-state={state}>
              {state}
            </span>
          </p>
          <WorkflowActions name={name} state={state} onChanged={detail.reload} />
          <ErrorNote error={live.error} />
          <WorkflowGraph nodes={workflow.picture.nodes} edges={workflow.picture.edges} counts={counts?.components ?? {}} />
          <div className="columns">
            <List title="resources" items={workflow.resources} />
            <List title="skills" items={workflow.skills} />
            {workflow.history === undefined ? null : <List title="history" items={workflow.history} />}
          </div>
          <section aria-labelledby="file-title">
            <h2 id="file-title">Compact file</h2>
            <p className="muted">sha256 {workflow.sha256}</p>
            <CopyButton value={workflow.compact} />
            <pre className="file" tabIndex={0} aria-label="The workflow's compact file">
              {workflow.compact}
            </pre>
          </section>
        </>
      )}
    </>
  );
}
