import type { ConlluSentence } from './conllu.js';
import { itemAt, tagWords, trainTagger, type TaggedSentence } from '@loom/nlp';
import { jointTag, Vocabulary } from './ewt.js';
import { readGumTreebank } from './gum.js';
import type { TrainContext } from './train.js';

/** How the parser's training tags are jackknifed: folds, and the fold taggers' settings. */
export interface JackknifeSettings {
  readonly folds: number;
  readonly epochs: number;
  readonly bits: number;
  readonly secondPassMargin: number;
}

/** Tagger training sentences: word forms and joint UPOS+XPOS label codes (labels added to `tags` as first seen). */
export function taggedSentences(sentences: readonly ConlluSentence[], tags: Vocabulary): TaggedSentence[] {
  return sentences.map((sentence) => ({
    words: sentence.words.map((word) => word.form),
    labels: sentence.words.map((word) => tags.add(jointTag(word.upos, word.xpos))),
  }));
}

/** The first `limit` items, or all without a limit. */
export function slice<T>(items: readonly T[], limit: number | undefined): readonly T[] {
  return limit === undefined ? items : items.slice(0, limit);
}

/**
 * GUM's sentences for the tagger: those whose every joint UPOS+XPOS label is already in `tags` (EWT train's), so the
 * tagger's labels stay EWT's, in EWT's order (the parser's tag codes are indices into them).
 */
export function gumTaggedSentences(ctx: TrainContext, tags: Vocabulary): { sentences: TaggedSentence[]; files: string[] } {
  const gum = readGumTreebank(ctx.dataDir);
  const known = slice(
    gum.sentences.filter((sentence) => sentence.words.every((word) => tags.get(jointTag(word.upos, word.xpos)) !== undefined)),
    ctx.limit,
  );
  ctx.log(`tagger: ${known.length} of ${gum.sentences.length} GUM sentences have only EWT's labels`);
  return { sentences: taggedSentences(known, tags), files: gum.files };
}

/**
 * Tag codes of each training sentence as a tagger that never saw it predicts them: EWT train's sentence i by a tagger
 * trained on the other folds (i % folds), each of `others` (GUM's) by one trained on all of EWT train. Returns the codes
 * of `train` then of `others`, indices into `tags`.
 */
export function jackknifeTags(
  ctx: TrainContext,
  settings: JackknifeSettings,
  train: readonly ConlluSentence[],
  others: readonly ConlluSentence[],
  tags: Vocabulary,
): number[][] {
  const folds = settings.folds;
  const predicted: number[][] = new Array<number[]>(train.length + others.length);
  // fold `folds` is the whole of EWT train, tagging the others
  for (let fold = 0; fold <= folds; fold++) {
    const whole = fold === folds;
    if (whole && others.length === 0) break;
    const foldTags = new Vocabulary(tags.items);
    const foldTagger = trainTagger(
      taggedSentences(
        train.filter((_, index) => whole || index % folds !== fold),
        foldTags,
      ),
      foldTags.items,
      {
        epochs: ctx.epochs ?? settings.epochs,
        bits: ctx.bits ?? settings.bits,
        secondPassMargin: settings.secondPassMargin,
        seed: (ctx.seed ?? 1) + (whole ? 0 : fold),
      },
    );
    const targets = whole
      ? others.map((sentence, index) => [train.length + index, sentence] as const)
      : [...train.entries()].filter(([index]) => index % folds === fold);
    for (const [index, sentence] of targets) {
      predicted[index] = tagWords(
        foldTagger,
        sentence.words.map((word) => word.form),
      ).map((label) => tags.add(itemAt(foldTags.items, label, 'fold tagger labels')));
    }
    ctx.log(whole ? `parser: ${others.length} GUM sentences tagged by a tagger of all EWT train` : `parser: jackknife fold ${fold + 1}/${folds} tagged`);
  }
  return predicted;
}
