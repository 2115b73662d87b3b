import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { defaultModelsDir, readCard } from '@loom/nlp';
import { NER_SETTINGS, NER_TRAINING_COMMAND, testDataDir, trainNerModel, type TrainContext } from '@loom/nlp-training';

// Issue 54 Must 4: the committed ner.bin is rebuilt byte for byte by `npm run train -- ner` (the full check is that
// command and `git diff --exit-code libs/nlp/models/ner.bin`, about a minute of CPU; docs/operations.md). What keeps
// that true, cheaply: the card names the tagger whose tags the model was trained on and the settings, and training on
// a small committed slice gives the same bytes every time, and the bytes recorded here.
const committed = defaultModelsDir();

/**
 * sha256 of ner.bin trained on the slice below with the committed tagger. It changes when the NER features, the
 * trainer, NER_SETTINGS, the committed tagger or the slice change: then retrain ner.bin (`npm run train -- ner`), record
 * its card's figures (`npm run eval -- nlp --record`), and put the new value here.
 */
const SLICE_FINGERPRINT = '531efd55c3c5745a2651fcd8909b1b1dedf97f70c8e2a3306964e4a04c4d94d7';

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** Trains NER on a slice of the test data into a fresh models directory holding a copy of the committed tagger; its sha256. */
async function sliceSha256(): Promise<string> {
  const modelsDir = mkdtempSync(join(tmpdir(), 'loom-ner-repro-'));
  dirs.push(modelsDir);
  for (const file of ['tagger.bin', 'tagger.card.json']) copyFileSync(join(committed, file), join(modelsDir, file));
  const ctx: TrainContext = { dataDir: testDataDir(), modelsDir, log: () => undefined, limit: 400, devLimit: 50, epochs: 1, bits: 16, members: 2 };
  await trainNerModel(ctx);
  return readCard(modelsDir, 'ner').sha256;
}

describe('NER training is reproducible', () => {
  it('the committed card names the committed tagger, the command and the settings of NER_SETTINGS', () => {
    const ner = readCard(committed, 'ner');
    expect(ner.settings['command']).toBe(NER_TRAINING_COMMAND);
    expect(ner.settings['tagger'], 'ner.bin was trained on another tagger: retrain it (npm run train -- ner)').toEqual({
      file: 'tagger.bin',
      sha256: readCard(committed, 'tagger').sha256,
    });
    for (const [key, value] of Object.entries(NER_SETTINGS)) expect(ner.settings[key], `settings.${key}`).toEqual(value);
  });

  it('training on a committed slice gives the same bytes twice, and the recorded ones', { timeout: 120_000 }, async () => {
    const first = await sliceSha256();
    expect(await sliceSha256()).toBe(first);
    expect(first, 'NER training on the slice changed: retrain ner.bin and update SLICE_FINGERPRINT').toBe(SLICE_FINGERPRINT);
  });
});
