// The registered skills: health, circuit state and latency, read again every few seconds.
import { type ReactNode } from 'react';
import { request } from '../api.js';
import { ErrorNote, Loading, text, useLoad } from '../components/status.js';
import { type SkillRow } from '../types.js';

export function SkillsPage(): ReactNode {
  const list = useLoad(() => request<{ skills: SkillRow[] }>('GET', '/api/skills'), [], 10_000);
  const skills = list.value?.skills;
  return (
    <>
      <h1>Skills</h1>
      <ErrorNote error={list.error} />
      {skills === undefined ? (
        list.error === undefined ? (
          <Loading what="the skills" />
        ) : null
      ) : skills.length === 0 ? (
        <p>No skills are registered.</p>
      ) : (
        <table>
          <caption className="visually-hidden">Registered skills</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Address</th>
              <th scope="col">Health</th>
              <th scope="col">Circuit</th>
              <th scope="col" className="number">
                Latency (ms)
              </th>
            </tr>
          </thead>
          <tbody>
            {skills.map((skill) => (
              <tr key={skill.name}>
                <th scope="row">{skill.name}</th>
                <td>{skill.url}</td>
                <td className={`health health-${skill.health.toLowerCase()}`} title={skill.detail}>
                  {skill.health}
                </td>
                <td>{skill.circuit}</td>
                <td className="number">{text(skill.latencyMs)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}
