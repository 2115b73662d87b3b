import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FailedPreconditionError } from '@loom/domain';

/** Environment variable naming the training data directory (holding `ud-english-ewt/`, `ner/`, …). */
export const DATA_DIR_ENV = 'LOOM_NLP_DATA_DIR';

/**
 * The training and evaluation data directory that `$LOOM_NLP_DATA_DIR` names; a FailedPreconditionError
 * naming the variable when it is unset or has no `ud-english-ewt` directory.
 */
export function findDataDir(): string {
  const fromEnv = process.env[DATA_DIR_ENV];
  if (!fromEnv)
    throw new FailedPreconditionError(
      `${DATA_DIR_ENV} is not set: set it to the NLP data directory (ud-english-ewt/, uner-english-ewt/, ner/) to train or evaluate`,
    );
  if (!existsSync(join(fromEnv, 'ud-english-ewt'))) throw new FailedPreconditionError(`${DATA_DIR_ENV}=${fromEnv} has no ud-english-ewt directory`);
  return resolve(fromEnv);
}

/**
 * The slices of the corpora that tests read, committed in libs/nlp-training/test-data with the layout of the
 * data directory (see its README).
 */
export function testDataDir(): string {
  // src/ and dist/ both sit directly under the package
  return join(dirname(fileURLToPath(import.meta.url)), '..', 'test-data');
}
