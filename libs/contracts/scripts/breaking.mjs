// `buf breaking` on proto/ (the working tree) against the last git tag, or against the previous commit (HEAD~1) until
// a tag exists, by the rules of buf.yaml's `breaking` section (FILE). A commit between that baseline and HEAD whose
// message carries a `Breaking-Change: <why>` trailer makes the breaks deliberate: they are printed, and pass. A checkout
// without the history to compare against (not a git work tree, a shallow clone, the first commit) skips the check and
// says why. Run by `npm run lint` (the lint script of @loom/contracts); exit 100 is buf's "breaking changes found".
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const workspaceRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const buf = join(workspaceRoot, 'node_modules/.bin/buf');
const TRAILER = 'Breaking-Change';

function say(message) {
  process.stderr.write(`buf breaking: ${message}\n`);
}

/** git's answer (trimmed), or undefined when git fails or is missing. */
function git(args) {
  const result = spawnSync('git', args, { cwd: workspaceRoot, encoding: 'utf8' });
  return result.error === undefined && result.status === 0 ? result.stdout.trim() : undefined;
}

/** The commit to compare against, or why there is none ({ skip }). */
function baseline() {
  if (git(['rev-parse', '--is-inside-work-tree']) !== 'true')
    return { skip: 'this is not a git work tree, so there is no earlier version of proto/ to compare against' };
  const tag = git(['describe', '--tags', '--abbrev=0', 'HEAD']);
  if (tag !== undefined) return { commit: git(['rev-parse', `${tag}^{commit}`]), name: `the last tag, ${tag}` };
  const parent = git(['rev-parse', '--verify', '--quiet', 'HEAD~1^{commit}']);
  if (parent !== undefined) return { commit: parent, name: `the previous commit, ${parent.slice(0, 12)} (no tag yet)` };
  if (git(['rev-parse', '--is-shallow-repository']) === 'true') {
    return {
      skip: 'this clone is shallow (git clone --depth 1): it holds no tag and not the previous commit; `git fetch --deepen=1` (or --unshallow) fetches it',
    };
  }
  return { skip: 'HEAD is the first commit and there is no tag: nothing to compare against' };
}

/** The `Breaking-Change` trailers of the commits after `commit` up to HEAD. */
function deliberateBreaks(commit) {
  const text = git(['log', `--format=%(trailers:key=${TRAILER},valueonly,separator=%x00)`, `${commit}..HEAD`]) ?? '';
  return text
    .split(/[\0\n]/)
    .map((line) => line.trim())
    .filter((line) => line !== '');
}

const against = baseline();
if (against.skip !== undefined) {
  say(`skipped: ${against.skip}`);
  process.exit(0);
}
// the baseline's proto/ and buf.yaml, as that commit had them, beside the working tree's
const snapshot = mkdtempSync(join(tmpdir(), 'loom-buf-breaking-'));
try {
  const archive = execFileSync('git', ['archive', against.commit, '--', 'buf.yaml', 'proto'], { cwd: workspaceRoot, maxBuffer: 64 << 20 });
  execFileSync('tar', ['-x', '-C', snapshot], { input: archive });
  const result = spawnSync(buf, ['breaking', '.', '--against', snapshot], { cwd: workspaceRoot, encoding: 'utf8' });
  if (result.error !== undefined) throw result.error;
  if (result.status === 0) {
    say(`proto/ keeps compatibility with ${against.name}`);
    process.exit(0);
  }
  process.stdout.write(result.stdout);
  process.stderr.write(result.stderr);
  const reasons = deliberateBreaks(against.commit);
  if (result.status === 100 && reasons.length > 0) {
    say(`the breaks above against ${against.name} are deliberate (${TRAILER}: ${reasons.join('; ')}); see docs/decisions.md`);
    process.exit(0);
  }
  say(
    `proto/ breaks compatibility with ${against.name} by buf.yaml's breaking rules (FILE)` +
      (result.status === 100
        ? `. Keep the old field numbers, names and types (add, don't change); if the break is deliberate, name it in ` +
          `docs/decisions.md and give its commit a "${TRAILER}: <why>" trailer`
        : ` (buf exited ${result.status})`),
  );
  process.exit(result.status ?? 1);
} finally {
  rmSync(snapshot, { recursive: true, force: true });
}
