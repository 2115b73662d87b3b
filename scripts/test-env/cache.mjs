// Where built tools (helm, the Neo4j launcher) are kept between runs: $LOOM_TOOLS_CACHE, else
// $XDG_CACHE_HOME/loom/tools, else ~/.cache/loom/tools. A second run finds them and builds nothing.
import { mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** The tools cache directory, created when missing. */
export function toolsCacheDir() {
  const dir = process.env.LOOM_TOOLS_CACHE || join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'loom', 'tools');
  mkdirSync(dir, { recursive: true });
  return dir;
}
