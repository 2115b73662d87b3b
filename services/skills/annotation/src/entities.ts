import { type Annotation, NO_ENTITY } from '@loom/domain';

/** Entity type (lower case) → mention texts, in order of appearance; merged: a run of tokens of one type is one mention. */
export function entitiesOf(annotation: Annotation, merged: boolean): Record<string, string[]> {
  const entities: Record<string, string[]> = {};
  const add = (type: string, text: string): void => {
    (entities[type.toLowerCase()] ??= []).push(text);
  };
  for (const sentence of annotation.sentences) {
    if (merged && sentence.entitymentions !== undefined) {
      for (const mention of sentence.entitymentions) add(mention.ner, mention.text);
      continue;
    }
    let run: { type: string; text: string } | undefined;
    for (const token of sentence.tokens) {
      const type = token.ner ?? NO_ENTITY;
      if (merged && run !== undefined && run.type === type) {
        run.text += `${token.before}${token.originalText}`;
        continue;
      }
      if (run !== undefined) add(run.type, run.text);
      run = type === NO_ENTITY ? undefined : { type, text: token.originalText };
    }
    if (run !== undefined) add(run.type, run.text);
  }
  return entities;
}
