import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FailedPreconditionError } from '@loom/domain';

/** Environment variable naming the training data directory (holding `ud-english-ewt/`, `ner/`, …). */
export const DATA_DIR_ENV = 'LOOM_NLP_DATA_DIR';

/**
 * The training and evaluation data directory: `$LOOM_NLP_DATA_DIR`, else the nearest `shared/data`
 * beside the repository or one of its parents (the repository's `../shared/data`, also from a worktree).
 */
export function findDataDir(): string {
  const fromEnv = process.env[DATA_DIR_ENV];
  if (fromEnv) {
    if (!existsSync(join(fromEnv, 'ud-english-ewt'))) throw new FailedPreconditionError(`${DATA_DIR_ENV}=${fromEnv} has no ud-english-ewt directory`);
    return resolve(fromEnv);
  }
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, 'shared', 'data');
    if (existsSync(join(candidate, 'ud-english-ewt'))) return candidate;
    const parent = dirname(dir);
    if (parent === dir)
      throw new FailedPreconditionError(`no shared/data directory with ud-english-ewt above ${dirname(fileURLToPath(import.meta.url))}; set ${DATA_DIR_ENV}`);
    dir = parent;
  }
}
