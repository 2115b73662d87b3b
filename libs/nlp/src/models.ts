import { ModelLoadError } from './errors.js';
import { decodeStrings, decodeWeights, encodeStrings, encodeWeights, section, type ModelFile } from './model-file.js';
import { hashString } from './hashing.js';
import { Perceptron } from './perceptron.js';
import type { ParserModel } from './parser.js';
import { ambiguityClassCodes, TAGGER_FEATURES_VERSION, type TaggerModel } from './tagger.js';
import { wordClauseRoles } from './tagger-clauses.js';
import type { TokenizerLexicon } from './tokenizer.js';
import type { SplitterModel } from './sentences.js';
import { decodeLemmatizer, encodeLemmatizer, type LemmatizerModel } from './lemmatizer.js';
import { NER_TAGS, type NerModel } from './ner.js';

/** Sections and header of a tagger model file. */
export function encodeTagger(
  model: TaggerModel & { ambiguityText: ReadonlyMap<string, string>; verbal: ReadonlySet<string> },
  prune: number,
): { header: Record<string, unknown>; sections: Map<string, Uint8Array> } {
  return {
    header: {
      kind: 'tagger',
      labels: model.labels,
      bits: model.perceptron.bits,
      secondPassMargin: model.secondPassMargin,
      featuresVersion: model.featuresVersion,
    },
    sections: new Map([
      ['weights', encodeWeights(model.perceptron.weights, prune)],
      ['second', encodeWeights(model.second.weights, prune)],
      ['ambiguity', encodeStrings([...model.ambiguityText].map(([w, t]) => `${w}\t${t}`))],
      ['unambiguous', encodeStrings([...model.unambiguous].map(([w, l]) => `${w}\t${l}`))],
      ['verbal', encodeStrings([...model.verbal])],
    ]),
  };
}

function stringArray(name: string, value: unknown, field: string): string[] {
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string'))
    throw new ModelLoadError(name, `header field ${field} is not a list of strings`);
  return value;
}

function integer(name: string, value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value)) throw new ModelLoadError(name, `header field ${field} is not an integer`);
  return value;
}

function checkKind(name: string, file: ModelFile, kind: string): void {
  if (file.header['kind'] !== kind) throw new ModelLoadError(name, `expected a ${kind} model, found ${String(file.header['kind'])}`);
}

/** Rebuilds a tagger from its model file. */
export function decodeTagger(name: string, file: ModelFile): TaggerModel {
  checkKind(name, file, 'tagger');
  const featuresVersion = file.header['featuresVersion'] ?? 1;
  if (typeof featuresVersion !== 'number' || !Number.isInteger(featuresVersion) || featuresVersion < 1 || featuresVersion > TAGGER_FEATURES_VERSION)
    throw new ModelLoadError(
      name,
      `trained on features version ${JSON.stringify(featuresVersion)}, this code reads versions 1 to ${TAGGER_FEATURES_VERSION}: update the code or retrain the tagger`,
    );
  const labels = stringArray(name, file.header['labels'], 'labels');
  const bits = integer(name, file.header['bits'], 'bits');
  const weights = decodeWeights(name, section(name, file, 'weights'));
  if (weights.length !== 1 << bits) throw new ModelLoadError(name, 'weights size does not match bits');
  const secondPassMargin = file.header['secondPassMargin'];
  if (typeof secondPassMargin !== 'number') throw new ModelLoadError(name, 'header field secondPassMargin is not a number');
  const second = decodeWeights(name, section(name, file, 'second'));
  if (second.length !== 1 << bits) throw new ModelLoadError(name, 'second-pass weights size does not match bits');
  const ambiguityText = new Map<string, string>();
  for (const line of decodeStrings(section(name, file, 'ambiguity'))) {
    const tab = line.lastIndexOf('\t');
    ambiguityText.set(line.slice(0, tab), line.slice(tab + 1));
  }
  const ambiguity = ambiguityClassCodes(ambiguityText);
  const unambiguous = new Map<string, number>();
  for (const line of decodeStrings(section(name, file, 'unambiguous'))) {
    const tab = line.lastIndexOf('\t');
    unambiguous.set(line.slice(0, tab), Number(line.slice(tab + 1)));
  }
  return {
    perceptron: new Perceptron(labels.length, bits, weights),
    second: new Perceptron(labels.length, bits, second),
    secondPassMargin,
    labels,
    ambiguity,
    unambiguous,
    featuresVersion,
    // files of features version 1 and 2 have no verbal section and do not read the verb cues
    wordRoles: wordClauseRoles(ambiguityText, labels, new Set(featuresVersion >= 3 ? decodeStrings(section(name, file, 'verbal')) : [])),
  };
}

/** Sections and header of a parser model file; `tags` are the tagger labels whose indices the parser reads. */
export function encodeParser(
  model: ParserModel,
  tags: readonly string[],
  prune: number,
): { header: Record<string, unknown>; sections: Map<string, Uint8Array> } {
  return {
    header: { kind: 'parser', labels: model.labels, tags, bits: model.perceptron.bits, labelBits: model.leftLabeler.bits, beam: model.beam },
    sections: new Map([
      ['transitions', encodeWeights(model.perceptron.weights, prune)],
      ['left', encodeWeights(model.leftLabeler.weights, prune)],
      ['right', encodeWeights(model.rightLabeler.weights, prune)],
    ]),
  };
}

/** Rebuilds a parser from its model file, with the tagger labels it was trained on. */
export function decodeParser(name: string, file: ModelFile): ParserModel & { tags: string[] } {
  checkKind(name, file, 'parser');
  const labels = stringArray(name, file.header['labels'], 'labels');
  const tags = stringArray(name, file.header['tags'], 'tags');
  const bits = integer(name, file.header['bits'], 'bits');
  const labelBits = integer(name, file.header['labelBits'], 'labelBits');
  // Files written before beam decoding have no width: they were trained and scored greedily.
  const beam = file.header['beam'] === undefined ? 1 : integer(name, file.header['beam'], 'beam');
  if (beam < 1) throw new ModelLoadError(name, 'header field beam is below 1');
  return {
    perceptron: new Perceptron(3, bits, decodeWeights(name, section(name, file, 'transitions'))),
    leftLabeler: new Perceptron(labels.length, labelBits, decodeWeights(name, section(name, file, 'left'))),
    rightLabeler: new Perceptron(labels.length, labelBits, decodeWeights(name, section(name, file, 'right'))),
    labels,
    tags,
    beam,
  };
}

/** Sections and header of a tokenizer model (lexicon and sentence splitter). */
export function encodeTokenizer(
  lexicon: TokenizerLexicon,
  splitter: SplitterModel,
  prune: number,
): { header: Record<string, unknown>; sections: Map<string, Uint8Array> } {
  return {
    header: { kind: 'tokenizer', bits: splitter.perceptron.bits },
    sections: new Map([
      ['abbreviations', encodeStrings([...lexicon.abbreviations].sort())],
      ['hyphenated', encodeStrings([...lexicon.hyphenated].sort())],
      ['multiwordTokens', encodeStrings([...lexicon.multiwordTokens].map(([form, parts]) => `${form}\t${parts.join(',')}`).sort())],
      ['hyphenPrefixes', encodeStrings([...lexicon.hyphenPrefixes].sort())],
      ['splitter', encodeWeights(splitter.perceptron.weights, prune)],
    ]),
  };
}

/** Rebuilds the tokenizer lexicon and sentence splitter. */
export function decodeTokenizer(name: string, file: ModelFile): { lexicon: TokenizerLexicon; splitter: SplitterModel } {
  checkKind(name, file, 'tokenizer');
  const bits = integer(name, file.header['bits'], 'bits');
  const multiwordTokens = new Map<string, number[]>();
  for (const line of decodeStrings(section(name, file, 'multiwordTokens'))) {
    const tab = line.lastIndexOf('\t');
    multiwordTokens.set(
      line.slice(0, tab),
      line
        .slice(tab + 1)
        .split(',')
        .map(Number),
    );
  }
  return {
    lexicon: {
      abbreviations: new Set(decodeStrings(section(name, file, 'abbreviations'))),
      hyphenated: new Set(decodeStrings(section(name, file, 'hyphenated'))),
      multiwordTokens,
      // Files written before the section existed split every hyphen they do not know.
      hyphenPrefixes: new Set(file.sections.has('hyphenPrefixes') ? decodeStrings(section(name, file, 'hyphenPrefixes')) : []),
    },
    splitter: { perceptron: new Perceptron(2, bits, decodeWeights(name, section(name, file, 'splitter'))) },
  };
}

/** Sections and header of a lemmatizer model. */
export function encodeLemmatizerFile(model: LemmatizerModel): { header: Record<string, unknown>; sections: Map<string, Uint8Array> } {
  const { lexicon, rules } = encodeLemmatizer(model);
  return {
    header: { kind: 'lemmatizer' },
    sections: new Map([
      ['lexicon', encodeStrings(lexicon)],
      ['rules', encodeStrings(rules)],
    ]),
  };
}

/** Rebuilds a lemmatizer. */
export function decodeLemmatizerFile(name: string, file: ModelFile): LemmatizerModel {
  checkKind(name, file, 'lemmatizer');
  return decodeLemmatizer(decodeStrings(section(name, file, 'lexicon')), decodeStrings(section(name, file, 'rules')));
}

/** Sections and header of an NER model. */
export function encodeNer(
  model: NerModel & {
    gazetteerText: ReadonlyMap<string, string>;
    lexiconText: ReadonlyMap<string, string>;
    nameListsText: ReadonlyMap<string, string>;
    wordClassesText?: ReadonlyMap<string, string>;
  },
  prune: number,
): { header: Record<string, unknown>; sections: Map<string, Uint8Array> } {
  const lines = (map: ReadonlyMap<string, string>): Uint8Array => encodeStrings([...map].map(([k, item]) => `${k}\t${item}`).sort());
  return {
    header: { kind: 'ner', tags: NER_TAGS, bits: model.perceptron.bits },
    sections: new Map([
      ['weights', encodeWeights(model.perceptron.weights, prune)],
      ['gazetteer', lines(model.gazetteerText)],
      ['lexicon', lines(model.lexiconText)],
      // a model trained without open name lists has no such section and reads no such features
      ...(model.nameListsText.size > 0 ? [['nameLists', lines(model.nameListsText)] as const] : []),
      // nor word classes, when trained without them
      ...(model.wordClassesText !== undefined && model.wordClassesText.size > 0 ? [['wordClasses', lines(model.wordClassesText)] as const] : []),
    ]),
  };
}

/** Rebuilds an NER model. */
export function decodeNer(name: string, file: ModelFile): NerModel {
  checkKind(name, file, 'ner');
  const tags = stringArray(name, file.header['tags'], 'tags');
  if (tags.join(',') !== NER_TAGS.join(',')) throw new ModelLoadError(name, `tags ${tags.join(',')} differ from ${NER_TAGS.join(',')}`);
  const bits = integer(name, file.header['bits'], 'bits');
  const hashedLines = (sectionName: string): Map<string, number> => {
    const map = new Map<string, number>();
    for (const line of decodeStrings(section(name, file, sectionName))) {
      const tab = line.lastIndexOf('\t');
      map.set(line.slice(0, tab), hashString(line.slice(tab + 1)));
    }
    return map;
  };
  return {
    perceptron: new Perceptron(NER_TAGS.length, bits, decodeWeights(name, section(name, file, 'weights'))),
    gazetteer: hashedLines('gazetteer'),
    lexicon: hashedLines('lexicon'),
    nameLists: file.sections.has('nameLists') ? hashedLines('nameLists') : new Map(),
    wordClasses: file.sections.has('wordClasses') ? hashedLines('wordClasses') : new Map(),
  };
}
