import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT_RELATION } from '@loom/domain';
import { AnnotateOptionError, defaultModelsDir, ModelLoadError, NlpPipeline, parseDictionaryTsv } from '@loom/nlp';

const TEXT =
  "Dr. Jane Smith joined Acme Rocket Works in Houston last May. She doesn't like long meetings! " +
  'The U.S. team, however, met her at 3:30pm and e-mailed john@example.com about it.';

const dictionary = parseDictionaryTsv('# term\ttype\nAcme Rocket Works\tCompany\nrocket\tThing\n');
const pipeline = new NlpPipeline({ dictionary });
const scratch: string[] = [];

afterAll(() => {
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
});

describe('annotate with the committed models', () => {
  const annotation = pipeline.annotate(TEXT, { docId: 'd1' });

  it('gives a tree per sentence: one root listed first, every token headed once, no cycles', () => {
    expect(annotation.docId).toBe('d1');
    expect(annotation.sentences.length).toBeGreaterThanOrEqual(2);
    for (const sentence of annotation.sentences) {
      const n = sentence.tokens.length;
      const deps = sentence.basicDependencies!;
      expect(deps).toHaveLength(n);
      expect(deps[0]!.dep).toBe(ROOT_RELATION);
      expect(deps[0]!.governor).toBe(0);
      expect(deps.filter((d) => d.governor === 0)).toHaveLength(1);
      expect(deps.map((d) => d.dependent).sort((a, b) => a - b)).toEqual(Array.from({ length: n }, (_, i) => i + 1));
      const head = new Map(deps.map((d) => [d.dependent, d.governor]));
      for (let i = 1; i <= n; i++) {
        let at = i;
        for (let steps = 0; at !== 0; steps++) {
          expect(steps).toBeLessThanOrEqual(n);
          at = head.get(at)!;
        }
      }
      for (const d of deps) {
        expect(d.dependentGloss).toBe(sentence.tokens[d.dependent - 1]!.word);
        if (d.governor > 0) expect(d.governorGloss).toBe(sentence.tokens[d.governor - 1]!.word);
      }
    }
  });

  it('gives every token offsets that slice the text, tags, a lemma, and before/after whitespace', () => {
    const tokens = annotation.sentences.flatMap((s) => s.tokens);
    for (const t of tokens) {
      expect(TEXT.slice(t.characterOffsetBegin, t.characterOffsetEnd)).toBe(t.originalText);
      expect(t.pos).toMatch(/\S/);
      expect(t.upos).toMatch(/^[A-Z]+$/);
      expect(t.lemma).toMatch(/\S/);
    }
    expect(tokens.map((t) => t.word)).toEqual(expect.arrayContaining(['Dr.', 'does', "n't", 'U.S.', '3:30', 'pm', 'john@example.com']));
    const does = tokens.find((t) => t.word === 'does')!;
    expect([does.before, does.after, does.lemma]).toEqual([' ', '', 'do']);
    // before + word … rebuilds the text
    expect(tokens.map((t, i) => (i === 0 ? t.before : '') + t.originalText + t.after).join('')).toBe(TEXT);
  });

  it('lets the dictionary override the tagger, longest match first, its type upper-cased as CoreNLP writes it', () => {
    const tokens = annotation.sentences[0]!.tokens;
    const acme = tokens.filter((t) => ['Acme', 'Rocket', 'Works'].includes(t.word));
    expect(acme.map((t) => t.ner)).toEqual(['COMPANY', 'COMPANY', 'COMPANY']);
    const mention = annotation.sentences[0]!.entitymentions!.find((m) => m.text === 'Acme Rocket Works')!;
    expect(mention.ner.toLowerCase()).toBe('company');
    expect(TEXT.slice(mention.characterOffsetBegin, mention.characterOffsetEnd)).toBe('Acme Rocket Works');
  });

  it('runs only the annotators asked for (with their prerequisites) and names a wrong one', () => {
    const tokensOnly = pipeline.annotate('Hello there. Bye.', { annotators: 'tokenize,ssplit' });
    expect(tokensOnly.sentences).toHaveLength(2);
    const token = tokensOnly.sentences[0]!.tokens[0]!;
    expect(token).not.toHaveProperty('pos');
    expect(token).not.toHaveProperty('ner');
    expect(tokensOnly.sentences[0]).not.toHaveProperty('basicDependencies');
    expect(() => pipeline.annotate('x', { annotators: ['tokenize', 'sentiment'] })).toThrow(AnnotateOptionError);
    expect(() => pipeline.annotate('x', { annotators: ['tokenize', 'sentiment'] })).toThrow('annotators[1]');
    expect(pipeline.annotate('   ').sentences).toEqual([]);
  });

  it('refuses a corrupt or missing model with a clear error, never a fallback', () => {
    const dir = mkdtempSync(join(tmpdir(), 'loom-nlp-models-'));
    scratch.push(dir);
    for (const file of readdirSync(defaultModelsDir())) copyFileSync(join(defaultModelsDir(), file), join(dir, file));
    const bytes = readFileSync(join(dir, 'tagger.bin'));
    bytes[bytes.length - 1] = bytes[bytes.length - 1]! ^ 0xff;
    writeFileSync(join(dir, 'tagger.bin'), bytes);
    expect(() => new NlpPipeline({ modelsDir: dir }).annotate('Hello.', { annotators: 'pos' })).toThrow(ModelLoadError);
    expect(() => new NlpPipeline({ modelsDir: dir }).annotate('Hello.', { annotators: 'pos' })).toThrow(/checksum mismatch/);
    // NER reads the tagger's parts of speech: with a sound tagger, a missing NER card is the error
    copyFileSync(join(defaultModelsDir(), 'tagger.bin'), join(dir, 'tagger.bin'));
    rmSync(join(dir, 'ner.card.json'));
    expect(() => new NlpPipeline({ modelsDir: dir }).annotate('Hello.', { annotators: 'ner' })).toThrow(/no model card/);
  });
});

describe('an -s word after its subject (issue 37)', () => {
  // "Grace Hopper lives in Boston." once tagged "lives" NNS, lemma "life": the tagger's features did not say that the
  // clause had no verb yet. Features version 2 do; the nouns below check that a plural noun after a verb stays a noun.
  const cases: [sentence: string, word: string, tag: string, lemma: string][] = [
    ['Grace Hopper lives in Boston.', 'lives', 'VBZ', 'live'],
    ['Alice Baker lives in London with her family.', 'lives', 'VBZ', 'live'],
    ['Acme employs 300 people in Ohio.', 'employs', 'VBZ', 'employ'],
    ['Jane works for Acme.', 'works', 'VBZ', 'work'],
    ['The company heads a consortium of banks.', 'heads', 'VBZ', 'head'],
    ['Mark Turner teaches at Harvard.', 'teaches', 'VBZ', 'teach'],
    ['The storm changed their lives in Boston.', 'lives', 'NNS', 'life'],
    ['Acme hired two heads of department.', 'heads', 'NNS', 'head'],
    // a bare verb after a coordinated subject (features version 3: the clause stays coordinated, the verb cues, and the
    // repair of a sentence tagged without a verb); their nouns stay nouns
    ['Ada Lovelace and Grace Hopper work for Google.', 'work', 'VBP', 'work'],
    ['Alice Baker and Mark Turner teach at Harvard.', 'teach', 'VBP', 'teach'],
    ['Their work for Google is done.', 'work', 'NN', 'work'],
  ];

  it.each(cases)('%s → %s %s %s', (sentence, word, tag, lemma) => {
    const tokens = pipeline.annotate(sentence, { annotators: 'tokenize,ssplit,pos,lemma' }).sentences.flatMap((parsed) => parsed.tokens);
    const found = tokens.filter((token) => token.word === word);
    expect(found).toHaveLength(1);
    expect([found[0]!.pos, found[0]!.lemma]).toEqual([tag, lemma]);
  });
});
