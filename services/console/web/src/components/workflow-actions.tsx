// Start, stop, pause and resume of one workflow: shown only to a session that may operate, each a POST with the CSRF
// token, the new state reported to the page.
import { type ReactNode } from 'react';
import { may, request, segment } from '../api.js';
import { useSession } from '../session.js';
import { ErrorNote, useAction } from './status.js';

const ACTIONS = ['start', 'stop', 'pause', 'resume'] as const;

/** Which actions make sense from a state: a stopped workflow starts, a running one stops or pauses, a paused one resumes. */
function enabled(action: (typeof ACTIONS)[number], state: string): boolean {
  const running = state === 'RUNNING' || state === 'STARTING';
  if (action === 'start') return !running && state !== 'PAUSED';
  if (action === 'stop') return running || state === 'PAUSED';
  if (action === 'pause') return running;
  return state === 'PAUSED';
}

export function WorkflowActions({ name, state, onChanged }: { name: string; state: string; onChanged: (state: string) => void }): ReactNode {
  const { session } = useSession();
  const action = useAction();
  if (!may(session, 'operate')) return null;
  return (
    <div className="actions">
      {ACTIONS.map((verb) => (
        <button
          key={verb}
          type="button"
          disabled={action.busy || !enabled(verb, state)}
          aria-label={`${verb} ${name}`}
          onClick={() =>
            action.run(async () => {
              const answer = await request<{ state: string }>('POST', `/api/workflows/${segment(name)}/${verb}`);
              onChanged(answer.state);
            })
          }
        >
          {verb[0]?.toUpperCase()}
          {verb.slice(1)}
        </button>
      ))}
      <ErrorNote error={action.error} />
    </div>
  );
}
