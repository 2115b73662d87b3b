#!/usr/bin/env node
/**
 * `npm run train -- <tokenizer|tagger|lemmatizer|parser|ner|all>` and `npm run eval -- nlp [--sample N] [--record]`.
 * Training reads only the data directory (no network) and writes models/<name>.bin and its card.
 */
import { entryOf, defaultModelsDir } from '@loom/nlp';
import { findDataDir } from './data-dir.js';
import { evalNlp, MODELS } from './eval-command.js';
import { trainLemmatizerModel, trainParserModel, trainTaggerModel, trainTokenizerModel, type TrainContext } from './train.js';
import { trainNerModel } from './train-ner.js';

function log(line: string): void {
  process.stdout.write(`${new Date().toISOString()} ${line}\n`);
}

async function train(names: readonly string[], limit: number | undefined): Promise<void> {
  const ctx: TrainContext = { dataDir: findDataDir(), modelsDir: defaultModelsDir(), log, limit };
  const run: Record<string, () => unknown> = {
    tokenizer: () => trainTokenizerModel(ctx),
    tagger: () => trainTaggerModel(ctx),
    lemmatizer: () => trainLemmatizerModel(ctx),
    parser: () => trainParserModel(ctx),
    ner: () => trainNerModel(ctx),
  };
  for (const name of names) {
    const started = Date.now();
    log(`training ${name}`);
    await entryOf(new Map(Object.entries(run)), name, 'trainers')();
    log(`trained ${name} in ${Math.round((Date.now() - started) / 1000)} s`);
  }
}

async function main(argv: readonly string[]): Promise<number> {
  const [command, target, ...rest] = argv;
  const option = (name: string): string | undefined => {
    const at = rest.indexOf(name);
    return at >= 0 ? rest[at + 1] : undefined;
  };
  if (command === 'train') {
    const names = target === 'all' ? [...MODELS] : target !== undefined && (MODELS as readonly string[]).includes(target) ? [target] : undefined;
    if (!names) {
      console.error(`usage: npm run train -- <${MODELS.join('|')}|all> [--limit N]`);
      return 2;
    }
    const limit = option('--limit');
    await train(names, limit === undefined ? undefined : Number(limit));
    return 0;
  }
  if (command === 'eval' && target === 'nlp') {
    const sample = option('--sample');
    return evalNlp({ sample: sample === undefined ? undefined : Number(sample), record: rest.includes('--record'), print: (line) => console.log(line) });
  }
  console.error('usage: cli.js train <model> | cli.js eval nlp [--sample N] [--record]');
  return 2;
}

process.exitCode = await main(process.argv.slice(2));
