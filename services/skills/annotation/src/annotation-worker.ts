// An annotation worker thread (WorkerPool of @loom/foundation): loads loom's NLP models once, then annotates one
// text at a time and writes the response's JSON, so the skill's own thread only reads requests and sends answers.
import { serveWorkerJobs } from '@loom/foundation/worker';
import { NlpPipeline } from '@loom/nlp';
import { type AnnotationAnswer, type AnnotationJob, annotationResponse } from './annotation-work.js';

const plain = new NlpPipeline();
// the models load before the worker says it is ready, so the first request's time is the annotation's alone
plain.loadAll();
const withDictionary = new Map<number, NlpPipeline>();

serveWorkerJobs((job: AnnotationJob): AnnotationAnswer => {
  let pipeline = plain;
  if (job.dictionaryId !== 0) {
    pipeline = withDictionary.get(job.dictionaryId) ?? new NlpPipeline({ dictionary: [...job.dictionary] });
    withDictionary.set(job.dictionaryId, pipeline);
  }
  const annotation = pipeline.annotate(job.text, { annotators: [...job.annotators] });
  return { json: JSON.stringify(annotationResponse(annotation, job)), sentences: annotation.sentences.length };
});
