// The schedules: each workflow's next and last fires and how the last went.
import { type ReactNode } from 'react';
import { request } from '../api.js';
import { ErrorNote, formatTime, Loading, text, useLoad } from '../components/status.js';
import { type ScheduleRow } from '../types.js';

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
              <th scope="col">Next fire</th>
              <th scope="col">Last fire</th>
              <th scope="col">Last outcome</th>
            </tr>
          </thead>
          <tbody>
            {schedules.map((schedule) => (
              <tr key={schedule.workflow}>
                <th scope="row">{schedule.workflow}</th>
                <td>{text(schedule.schedule ?? schedule.cron ?? (schedule.autoStart === true ? 'starts by itself' : undefined))}</td>
                <td>{schedule.paused === true ? 'yes' : 'no'}</td>
                <td>{formatTime(schedule.nextFire)}</td>
                <td>{formatTime(schedule.lastFire)}</td>
                <td>{text(schedule.lastOutcome ?? schedule.lastError)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}
