// Failed messages from the failure store: filters, one message's error and body (when the role allows), retry and
// discard of the selected ones (only for a session that may operate).
import { type FormEvent, type ReactNode, useState } from 'react';
import { may, query, request, segment } from '../api.js';
import { ErrorNote, formatTime, Loading, shownName, text, useAction, useLoad } from '../components/status.js';
import { useSession } from '../session.js';
import { type FailureDetail, type FailureSummary, type FailuresPage as Page, type WorkflowSummary } from '../types.js';

interface Filter {
  readonly workflow: string;
  readonly component: string;
  readonly kind: string;
}

const NO_FILTER: Filter = { workflow: '', component: '', kind: '' };
/** How often the list is read again. */
const REFRESH_MS = 3000;

/** The filter: the workflow (failed messages are kept per workflow), then component and error kind. */
function FilterForm({ workflows, initial, onApply }: { workflows: readonly WorkflowSummary[]; initial: Filter; onApply: (filter: Filter) => void }): ReactNode {
  const [filter, setFilter] = useState<Filter>(initial);
  const submit = (event: FormEvent): void => {
    event.preventDefault();
    onApply(filter);
  };
  return (
    <form className="filters" onSubmit={submit} aria-label="Filter the failed messages">
      <label>
        Workflow
        <select name="workflow" value={filter.workflow} onChange={(event) => setFilter({ ...filter, workflow: event.target.value })}>
          {workflows.map((workflow) => (
            <option key={workflow.name} value={workflow.name}>
              {workflow.title ?? workflow.name}
            </option>
          ))}
        </select>
      </label>
      {(['component', 'kind'] as const).map((field) => (
        <label key={field}>
          {field[0]?.toUpperCase() + field.slice(1)}
          <input name={field} value={filter[field]} onChange={(event) => setFilter({ ...filter, [field]: event.target.value })} />
        </label>
      ))}
      <button type="submit">Filter</button>
    </form>
  );
}

function Detail({ workflow, id }: { workflow: string; id: string }): ReactNode {
  const detail = useLoad(() => request<FailureDetail>('GET', `/api/failures/${segment(workflow)}/${segment(id)}`), [workflow, id]);
  const failure = detail.value;
  return (
    <section className="detail" aria-labelledby="detail-title">
      <h2 id="detail-title">Failed message {id}</h2>
      <ErrorNote error={detail.error} />
      {failure === undefined ? null : (
        <>
          <h3>Error</h3>
          <pre tabIndex={0} aria-label="The error">
            {failure.failure === undefined ? text(failure.error) : JSON.stringify(failure.failure, null, 2)}
          </pre>
          <h3>Message</h3>
          {failure.message === undefined ? (
            <p className="muted">{failure.contentKept === true ? 'Kept, but your role may not read message content.' : 'Its content was not kept.'}</p>
          ) : (
            <pre tabIndex={0} aria-label="The message">
              {JSON.stringify(failure.message, null, 2)}
            </pre>
          )}
        </>
      )}
    </section>
  );
}

export function FailuresPage(): ReactNode {
  const workflows = useLoad(() => request<{ workflows: WorkflowSummary[] }>('GET', '/api/workflows'), []);
  const names = workflows.value?.workflows;
  return (
    <>
      <h1>Failed messages</h1>
      <ErrorNote error={workflows.error} />
      {names === undefined ? (
        workflows.error === undefined ? (
          <Loading what="the workflows" />
        ) : null
      ) : names.length === 0 ? (
        <p>No workflows are stored, so no message has failed.</p>
      ) : (
        <Failures workflows={names} />
      )}
    </>
  );
}

function Failures({ workflows }: { workflows: readonly WorkflowSummary[] }): ReactNode {
  const { session } = useSession();
  const operate = may(session, 'operate');
  const [filter, setFilter] = useState<Filter>({ ...NO_FILTER, workflow: workflows[0]?.name ?? '' });
  const [pageToken, setPageToken] = useState<string>();
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  const [shown, setShown] = useState<FailureSummary>();
  const [outcome, setOutcome] = useState<string>();
  // read again every few seconds: a retried message leaves the store once the run has taken it
  const list = useLoad(() => request<Page>('GET', `/api/failures${query({ ...filter, pageToken })}`), [filter, pageToken], REFRESH_MS);
  const action = useAction();
  const failures = list.value?.failures;
  const key = (failure: FailureSummary): string => `${failure.workflow}\u0000${failure.id}`;
  const act = (verb: 'retry' | 'discard'): void =>
    action.run(async () => {
      const chosen = (failures ?? []).filter((failure) => selected.has(key(failure)));
      // the backend takes one workflow's ids a request
      for (const workflow of new Set(chosen.map((failure) => failure.workflow))) {
        const ids = chosen.filter((failure) => failure.workflow === workflow).map((failure) => failure.id);
        await request('POST', `/api/failures/${verb}`, { workflow, ids });
      }
      setOutcome(`${verb === 'retry' ? 'Retried' : 'Discarded'} ${chosen.length} message${chosen.length === 1 ? '' : 's'}.`);
      setSelected(new Set());
      list.reload();
    });
  return (
    <>
      <FilterForm
        workflows={workflows}
        initial={filter}
        onApply={(next) => {
          setFilter(next);
          setPageToken(undefined);
        }}
      />
      <ErrorNote error={list.error} />
      {list.value === undefined ? null : (
        <p className="muted">
          {list.value.total ?? list.value.failures.length} failed
          {Object.entries(list.value.counts ?? {})
            .map(([kind, count]) => ` · ${kind} ${count}`)
            .join('')}
        </p>
      )}
      {operate ? (
        <div className="actions">
          <button type="button" disabled={action.busy || selected.size === 0} onClick={() => act('retry')}>
            Retry selected
          </button>
          <button type="button" disabled={action.busy || selected.size === 0} onClick={() => act('discard')}>
            Discard selected
          </button>
          <span role="status">{outcome}</span>
          <ErrorNote error={action.error} />
        </div>
      ) : null}
      {failures === undefined ? (
        list.error === undefined ? (
          <Loading what="the failed messages" />
        ) : null
      ) : failures.length === 0 ? (
        <p>
          No failed messages of {filter.workflow}
          {filter.component === '' && filter.kind === '' ? '' : ' match the filter'}.
        </p>
      ) : (
        <table>
          <caption className="visually-hidden">Failed messages</caption>
          <thead>
            <tr>
              {operate ? (
                <th scope="col">
                  <span className="visually-hidden">Select</span>
                </th>
              ) : null}
              <th scope="col">Id</th>
              <th scope="col">Workflow</th>
              <th scope="col">Component</th>
              <th scope="col">Kind</th>
              <th scope="col">Error</th>
              <th scope="col" className="number">
                Attempts
              </th>
              <th scope="col">Last failed</th>
            </tr>
          </thead>
          <tbody>
            {failures.map((failure) => (
              <tr key={key(failure)} data-failure={failure.id}>
                {operate ? (
                  <td>
                    <input
                      type="checkbox"
                      aria-label={`Select ${failure.id}`}
                      checked={selected.has(key(failure))}
                      onChange={(event) => {
                        const next = new Set(selected);
                        if (event.target.checked) next.add(key(failure));
                        else next.delete(key(failure));
                        setSelected(next);
                      }}
                    />
                  </td>
                ) : null}
                <td>
                  <button type="button" className="link" onClick={() => setShown(failure)}>
                    {failure.id}
                  </button>
                </td>
                <td>{shownName(failure.workflow)}</td>
                <td>{failure.component}</td>
                <td>{text(failure.kind)}</td>
                <td>{text(failure.error)}</td>
                <td className="number">{text(failure.attempts)}</td>
                <td>{formatTime(failure.lastFailed)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {list.value?.nextPageToken === undefined || list.value.nextPageToken === '' ? null : (
        <button type="button" onClick={() => setPageToken(list.value?.nextPageToken)}>
          Next page
        </button>
      )}
      {shown === undefined ? null : <Detail workflow={shown.workflow} id={shown.id} />}
    </>
  );
}
