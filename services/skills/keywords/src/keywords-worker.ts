// A keyword worker thread (WorkerPool of @loom/foundation): TextRank over one checked annotation at a time.
import { type Annotation } from '@loom/domain';
import { serveWorkerJobs } from '@loom/foundation/worker';
import { type Keyword, textRank, type TextRankOptions } from './textrank.js';

/** One `/extractKeywords` request's work: the annotation the service checked and the options it read. */
export interface KeywordsJob {
  readonly annotation: Annotation;
  readonly options: TextRankOptions;
}

serveWorkerJobs((job: KeywordsJob): Keyword[] => textRank(job.annotation, job.options));
