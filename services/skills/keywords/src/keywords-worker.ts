// A keyword worker thread (WorkerPool of @loom/foundation): TextRank over one checked annotation at a time.
import { type Annotation } from '@loom/domain';
import { serveWorkerJobs } from '@loom/foundation/worker';
import { type Keyword, textRank, type TextRankOptions } from './textrank.js';

/**
 * One `/extractKeywords` request's work: the options the service read, and the annotation it checked, as the request's
 * JSON text (parsed again here, which costs less than cloning the parsed annotation across threads) or as a value.
 */
export interface KeywordsJob {
  readonly request: { readonly text: string } | { readonly annotation: Annotation };
  readonly options: TextRankOptions;
}

/** The annotation of a request's text, which the service has checked (annotatedText is an annotation, or one as JSON text). */
function annotationOf(requestText: string): Annotation {
  const { annotatedText } = JSON.parse(requestText) as { annotatedText: Annotation | string };
  return typeof annotatedText === 'string' ? (JSON.parse(annotatedText) as Annotation) : annotatedText;
}

serveWorkerJobs((job: KeywordsJob): Keyword[] => textRank('text' in job.request ? annotationOf(job.request.text) : job.request.annotation, job.options));
