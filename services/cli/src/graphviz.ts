import { spawn } from 'node:child_process';
import { UsageError } from './usage-error.js';

/** The advice given when Graphviz is missing. */
const INSTALL_GRAPHVIZ =
  'install Graphviz (Debian/Ubuntu: apt-get install graphviz; macOS: brew install graphviz) to write SVG, or use --format mermaid or --format dot';

/**
 * DOT text rendered to SVG by Graphviz's `dot` (`command`, found on PATH). A UsageError saying to
 * install Graphviz when there is no such program; one with dot's own message when it refuses the text.
 */
export function renderSvg(dotText: string, command = 'dot'): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, ['-Tsvg'], { stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
    child.on('error', (error: NodeJS.ErrnoException) => {
      reject(error.code === 'ENOENT' ? new UsageError(`Graphviz's ${command} is not installed (not found on PATH): ${INSTALL_GRAPHVIZ}`) : error);
    });
    child.on('close', (code) => {
      if (code === 0) resolve(Buffer.concat(out).toString('utf8'));
      else if (code !== null)
        reject(new UsageError(`${command} could not draw the workflow (exit code ${code}): ${Buffer.concat(err).toString('utf8').trim()}`));
    });
    // a dot that is missing never reads its input: the write error is the spawn error above
    child.stdin.on('error', () => undefined);
    child.stdin.end(dotText);
  });
}
