// Vitest's global setup for every package (vitest.shared.ts): the run's temporary files go in a directory of their own,
// removed when the run ends. Tests, their harnesses and the processes they start (`loom serve`, skills, script hosts)
// make their scratch directories under os.tmpdir(), which reads TMPDIR; many never removed theirs (embedded databases
// of 30-65 MB each), and thousands of runs filled the machine's /tmp.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export default function setup(): () => void {
  const outer = process.env.TMPDIR;
  const scratch = mkdtempSync(join(tmpdir(), 'loom-test-run-'));
  process.env.TMPDIR = scratch;
  return () => {
    if (outer === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = outer;
    try {
      // a process a test left running may still be writing: a few tries, then what is left stays, said once
      rmSync(scratch, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
    } catch (error) {
      console.warn(`the test run's scratch directory ${scratch} was not removed: ${(error as Error).message}`);
    }
  };
}
