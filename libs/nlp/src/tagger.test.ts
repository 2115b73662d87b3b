import { describe, expect, it } from 'vitest';
import { ModelLoadError } from './errors.js';
import { decodeModelFile, encodeModelFile } from './model-file.js';
import { decodeTagger, encodeTagger } from './models.js';
import { tagWords, trainTagger, TAGGER_FEATURES_VERSION } from './tagger.js';

const LABELS = ['PROPN\tNNP', 'VERB\tVBZ', 'ADP\tIN', 'PUNCT\t.', 'PRON\tPRP$', 'NOUN\tNNS', 'VERB\tVBD'];
const [PROPN, VBZ, IN, PUNCT, PRP, NNS, VBD] = LABELS.map((_, index) => index) as [number, number, number, number, number, number, number];

// "lives" after a proper noun and no verb is a verb; after a verb and a possessive, a noun.
const SENTENCES = [
  { words: ['Ann', 'Lee', 'lives', 'in', 'Rome', '.'], labels: [PROPN, PROPN, VBZ, IN, PROPN, PUNCT] },
  { words: ['Bob', 'Ray', 'lives', 'in', 'Oslo', '.'], labels: [PROPN, PROPN, VBZ, IN, PROPN, PUNCT] },
  { words: ['War', 'changed', 'their', 'lives', 'in', 'Rome', '.'], labels: [PROPN, VBD, PRP, NNS, IN, PROPN, PUNCT] },
  { words: ['Ann', 'saved', 'their', 'lives', 'in', 'Oslo', '.'], labels: [PROPN, VBD, PRP, NNS, IN, PROPN, PUNCT] },
];

describe('tagger', () => {
  const model = trainTagger(SENTENCES, LABELS, { epochs: 5, bits: 14, seed: 1, secondPassMargin: 20 });

  it('learns its training sentences, a -s verb after a proper-noun subject and the same word as a noun after a verb', () => {
    for (const sentence of SENTENCES) expect(tagWords(model, sentence.words)).toEqual(sentence.labels);
    expect(tagWords(model, ['Eve', 'Kim', 'lives', 'in', 'Rome', '.'])).toEqual([PROPN, PROPN, VBZ, IN, PROPN, PUNCT]);
  });

  it('keeps the features version in its file: versions 1 and 2 (before the verb-seen and verb-cue features) still load, an unknown one is refused', () => {
    const encoded = encodeTagger(model, 0);
    const file = (header: Record<string, unknown>): ReturnType<typeof decodeModelFile> => decodeModelFile('tagger', encodeModelFile(header, encoded.sections));
    const decoded = decodeTagger('tagger', file(encoded.header));
    expect(decoded.featuresVersion).toBe(TAGGER_FEATURES_VERSION);
    expect(tagWords(decoded, SENTENCES[0]!.words)).toEqual(SENTENCES[0]!.labels);
    expect(decodeTagger('tagger', file({ ...encoded.header, featuresVersion: undefined })).featuresVersion).toBe(1);
    // a file of version 2 has no list of verbal words (the verb cues are version 3's)
    const withoutVerbal = new Map([...encoded.sections].filter(([name]) => name !== 'verbal'));
    const version2 = decodeTagger('tagger', decodeModelFile('tagger', encodeModelFile({ ...encoded.header, featuresVersion: 2 }, withoutVerbal)));
    expect(version2.featuresVersion).toBe(2);
    expect(() => decodeTagger('tagger', decodeModelFile('tagger', encodeModelFile(encoded.header, withoutVerbal)))).toThrow("section 'verbal' missing");
    const newer = { ...encoded.header, featuresVersion: TAGGER_FEATURES_VERSION + 1 };
    expect(() => decodeTagger('tagger', file(newer))).toThrow(ModelLoadError);
    expect(() => decodeTagger('tagger', file(newer))).toThrow(`trained on features version ${TAGGER_FEATURES_VERSION + 1}`);
  });
});
