import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ModelLoadError } from './errors.js';
import { sha256 } from './model-file.js';

/** The JSON card committed beside each model file. */
export interface ModelCard {
  readonly name: string;
  readonly file: string;
  readonly sha256: string;
  readonly bytes: number;
  readonly data: readonly { readonly file: string; readonly sha256: string; readonly use: string }[];
  readonly settings: Record<string, unknown>;
  readonly epochs: number;
  /** Development-set scores measured when the model was written (percentages). */
  readonly dev: Record<string, number>;
  readonly licence: string;
  readonly attribution: readonly string[];
  /** What a reader should know beyond the figures, such as a trade-off accepted when the model was adopted. */
  readonly notes?: readonly string[];
  readonly trainingSeconds?: number;
}

/** Path of a model's card. */
export function cardPath(modelsDir: string, name: string): string {
  return join(modelsDir, `${name}.card.json`);
}

/** Reads a model's card; a missing or malformed card is a ModelLoadError. */
export function readCard(modelsDir: string, name: string): ModelCard {
  let text: string;
  try {
    text = readFileSync(cardPath(modelsDir, name), 'utf8');
  } catch (error) {
    throw new ModelLoadError(name, `no model card at ${cardPath(modelsDir, name)} (train it with \`npm run train -- ${name}\`)`, { cause: error });
  }
  const card = JSON.parse(text) as ModelCard;
  if (typeof card.sha256 !== 'string' || typeof card.file !== 'string') throw new ModelLoadError(name, 'model card lacks file or sha256');
  return card;
}

/** Writes a model's card. */
export function writeCard(modelsDir: string, card: ModelCard): void {
  writeFileSync(cardPath(modelsDir, card.name), `${JSON.stringify(card, null, 2)}\n`);
}

/** A data file's entry for a card: its path under the data directory and SHA-256. */
export function dataEntry(dataDir: string, file: string, use: string): { file: string; sha256: string; use: string } {
  return { file, sha256: sha256(readFileSync(join(dataDir, file))), use };
}

export const EWT_LICENCE = 'CC BY-SA 4.0';
export const EWT_ATTRIBUTION =
  'Trained on Universal Dependencies English Web Treebank (UD_English-EWT, commit 15d613d8), CC BY-SA 4.0; Silveira et al. 2014, Universal Dependencies contributors.';
