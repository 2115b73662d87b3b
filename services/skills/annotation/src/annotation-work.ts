import { type Annotation } from '@loom/domain';
import { type DictionaryEntry } from '@loom/nlp';
import { entitiesOf } from './entities.js';

/** One `/annotate` request's work, as the main thread hands it to an annotation worker. */
export interface AnnotationJob {
  readonly text: string;
  /** libs/nlp's annotator names (`depparse`, not `dependency`). */
  readonly annotators: readonly string[];
  /** Identifies the dictionary within this process: a worker builds its pipeline once per id. 0: none. */
  readonly dictionaryId: number;
  readonly dictionary: readonly DictionaryEntry[];
  readonly pipeline: string;
  /** Entities of several tokens merged into one mention (`/annotate`), or listed per token (`/v2/annotate`). */
  readonly merged: boolean;
  readonly docId?: string;
}

/** A worker's answer: the response body as JSON text, written in the worker so the service's thread only sends it. */
export interface AnnotationAnswer {
  readonly json: string;
  readonly sentences: number;
}

/** The `/annotate` response: the annotation with `docId`, `pipeline` and `entities`. */
export function annotationResponse(annotation: Annotation, job: Pick<AnnotationJob, 'docId' | 'pipeline' | 'merged'>): Record<string, unknown> {
  return { ...(job.docId === undefined ? {} : { docId: job.docId }), ...annotation, pipeline: job.pipeline, entities: entitiesOf(annotation, job.merged) };
}
