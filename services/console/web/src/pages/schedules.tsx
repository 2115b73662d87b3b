// The schedules: each workflow's next and last fires and how the last went.
import { type ReactNode } from 'react';
import { request } from '../api.js';
import { ErrorNote, formatTime, Loading, shownName, text, useLoad } from '../components/status.js';
import { type ScheduleRow } from '../types.js';

/** `0 * * * * (UTC)`, `starts by itself`, or both. */
function describe(schedule: ScheduleRow): string {
  const parts = [];
  if (schedule.cron !== undefined && schedule.cron !== '') {
    parts.push(`${schedule.cron}${schedule.timezone ? ` (${schedule.timezone})` : ''}${schedule.enabled === false ? ', disabled' : ''}`);
  }
  if (schedule.autoStart === true) parts.push('starts by itself');
  return parts.join('; ') || '—';
}

/** `started 3 · skipped 1`: the fires with a count. */
function fires(counts: ScheduleRow['fires']): string {
  const shown = Object.entries(counts ?? {}).filter(([, count]) => count > 0);
  return shown.length === 0 ? '—' : shown.map(([outcome, count]) => `${outcome} ${count}`).join(' · ');
}

export function SchedulesPage(): ReactNode {
  const list = useLoad(() => request<{ schedules: ScheduleRow[] }>('GET', '/api/schedules'), [], 10_000);
  const schedules = list.value?.schedules;
  return (
    <>
      <h1>Schedules</h1>
      <ErrorNote error={list.error} />
      {schedules === undefined ? (
        list.error === undefined ? (
          <Loading what="the schedules" />
        ) : null
      ) : schedules.length === 0 ? (
        <p>No workflow has a schedule or starts by itself.</p>
      ) : (
        <table>
          <caption className="visually-hidden">Schedules</caption>
          <thead>
            <tr>
              <th scope="col">Workflow</th>
              <th scope="col">Schedule</th>
              <th scope="col">Paused</th>
              <th scope="col">Run</th>
              <th scope="col">Next fire</th>
              <th scope="col">Last fire</th>
              <th scope="col">Fires by outcome</th>
              <th scope="col">Last error</th>
            </tr>
          </thead>
          <tbody>
            {schedules.map((schedule) => (
              <tr key={schedule.workflow}>
                <th scope="row">{shownName(schedule.workflow)}</th>
                <td>{describe(schedule)}</td>
                <td>{schedule.paused === true ? 'yes' : 'no'}</td>
                <td>{schedule.runState === 'UNSPECIFIED' ? 'not started by the scheduler' : text(schedule.runState)}</td>
                <td>{formatTime(schedule.nextFire)}</td>
                <td>{formatTime(schedule.lastFire)}</td>
                <td>{fires(schedule.fires)}</td>
                <td>{text(schedule.problem ?? schedule.lastError)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}
