// CPU time read from Linux /proc: of a process, of its children, and by thread (the text-to-graph bench's split of
// loom's CPU: its main thread, the embedded graph's engine in a worker thread of its own, and the rest).
import { readdirSync, readFileSync } from 'node:fs';

/**
 * CPU seconds from a /proc stat file (`/proc/<pid>/stat`, `/proc/<pid>/task/<tid>/stat`, `/proc/self/stat`): user and
 * system time of the process or thread, or with `children` of the children it waited for. Throws once the file is gone.
 */
export function statCpuSeconds(path, children = false) {
  // the fields after the command name, which is in parentheses and may hold spaces: utime, stime, cutime and cstime are
  // the 12th to the 15th, in clock ticks of 10 ms
  const fields = readFileSync(path, 'utf8').split(') ')[1].split(' ');
  const first = children ? 13 : 11;
  return (Number(fields[first]) + Number(fields[first + 1])) / 100;
}

/** CPU seconds (user + system) of each thread of a process so far, by thread id (Linux /proc); empty off Linux. */
export function threadCpu(pid) {
  const times = new Map();
  let tids = [];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return times; // not Linux, or the process is gone
  }
  for (const tid of tids) {
    try {
      times.set(tid, statCpuSeconds(`/proc/${pid}/task/${tid}/stat`));
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return times;
}

/**
 * The CPU seconds between two threadCpu snapshots of the loom process spent by the embedded graph: the threads that
 * were not there when loom began listening but were by the first snapshot. The embedded graph's PGlite runs in a worker thread of its own, started
 * with the workflow that opens the graph; loom's services, their own database and V8's helper threads are all there at
 * listening (libuv's pool, if started later, would be counted here too: it is idle on this path).
 */
export function graphSeconds(before, after, threadsAtListening) {
  let seconds = 0;
  // a thread started within the window is not the graph's (the graph opens at the workflow's start): a skill's worker
  // thread in one process, started at the first call
  for (const [tid, cpu] of after) if (!threadsAtListening.has(tid) && before.has(tid)) seconds += cpu - (before.get(tid) ?? 0);
  return seconds;
}

/** The CPU seconds between two threadCpu snapshots of a process spent by its main thread (the thread whose id is the pid). */
export function mainThreadSeconds(pid, before, after) {
  const tid = String(pid);
  return (after.get(tid) ?? 0) - (before.get(tid) ?? 0);
}

/** The ids of this process's children running `command` (the name /proc gives, e.g. `nats-server`), from /proc; empty off Linux. */
export function childPids(command) {
  let entries = [];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  const pids = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      // the fields after the name: state, then the parent's id
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (name === command && parent === process.pid) pids.push(Number(entry));
    } catch {
      // the process ended between the listing and the read
    }
  }
  return pids;
}
