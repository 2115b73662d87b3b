// Every workflow: its version, its state on each executor, messages in/out/failed a minute, and the actions the
// session may take on it.
import { type ReactNode } from 'react';
import { Link } from 'react-router';
import { request } from '../api.js';
import { ErrorNote, Loading, useLoad } from '../components/status.js';
import { WorkflowActions } from '../components/workflow-actions.js';
import { type WorkflowSummary } from '../types.js';

/** How often the list is read again (the rates are a minute's). */
const REFRESH_MS = 5000;

export function WorkflowsPage(): ReactNode {
  const list = useLoad(() => request<{ workflows: WorkflowSummary[] }>('GET', '/api/workflows'), [], REFRESH_MS);
  const workflows = list.value?.workflows;
  return (
    <>
      <h1>Workflows</h1>
      <ErrorNote error={list.error} />
      {workflows === undefined ? (
        list.error === undefined ? (
          <Loading what="the workflows" />
        ) : null
      ) : workflows.length === 0 ? (
        <p>No workflows are stored yet. Push one with `loom workflow push`.</p>
      ) : (
        <table>
          <caption className="visually-hidden">Workflows, their state and their messages a minute</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Version</th>
              <th scope="col">State</th>
              <th scope="col">Executors</th>
              <th scope="col" className="number">
                In/min
              </th>
              <th scope="col" className="number">
                Out/min
              </th>
              <th scope="col" className="number">
                Failed/min
              </th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {workflows.map((workflow) => (
              <tr key={workflow.name} data-workflow={workflow.name}>
                <th scope="row">
                  <Link to={`/workflows/${encodeURIComponent(workflow.name)}`}>{workflow.title ?? workflow.name}</Link>
                </th>
                <td>{workflow.version}</td>
                <td className={`state state-${workflow.state.toLowerCase()}`} title={workflow.lastError}>
                  {workflow.state}
                </td>
                <td>{workflow.executors.map((executor) => `${executor.id}: ${executor.state}`).join(', ') || '—'}</td>
                <td className="number">{workflow.rates.in}</td>
                <td className="number">{workflow.rates.out}</td>
                <td className="number">{workflow.rates.failed}</td>
                <td>
                  <WorkflowActions name={workflow.name} state={workflow.state} onChanged={list.reload} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}
