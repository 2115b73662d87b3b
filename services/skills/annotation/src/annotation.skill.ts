import { ANNOTATION_JSON_SCHEMA, type Annotation } from '@loom/domain';
import { WorkerPool } from '@loom/foundation';
import { type DictionaryEntry, NlpPipeline } from '@loom/nlp';
import { JsonText, type SkillDefinition, type SkillModule, type SkillRoute, type SkillSettings } from '@loom/skill-service-kit';
import { type AnnotationAnswer, type AnnotationJob, annotationResponse } from './annotation-work.js';
import { type Pipeline, PipelineStore, SUPPORTED_ANNOTATORS } from './pipelines.js';

// the worker runs the built module (dist), from src under the tests as from dist in a deployment
const WORKER_ENTRY = new URL('../dist/annotation-worker.js', import.meta.url);

/** Annotates text with the given annotators, dictionary entries overriding the statistical entity types. */
export type Annotator = (
  text: string,
  options: { readonly annotators: readonly string[]; readonly dictionary: readonly DictionaryEntry[] },
) => Annotation | Promise<Annotation>;

/** What the annotation skill is built from. */
export interface AnnotationSkillOptions {
  /** Annotates on the service's own thread (tests, other models); default: loom's models (libs/nlp) on SKILL_WORKERS worker threads. */
  readonly annotator?: Annotator;
}

/** Runs an annotation request's work: in worker threads, or with a given annotator on this thread. */
interface AnnotationEngine {
  annotate(job: AnnotationJob, signal: AbortSignal): Promise<AnnotationAnswer | { readonly body: Record<string, unknown>; readonly sentences: number }>;
  health(): Record<string, unknown>;
  close(): Promise<void>;
}

function inProcessEngine(annotator: Annotator): AnnotationEngine {
  return {
    async annotate(job) {
      const annotation: Annotation = await annotator(job.text, { annotators: job.annotators, dictionary: job.dictionary });
      return { body: annotationResponse(annotation, job), sentences: annotation.sentences.length };
    },
    health: () => ({ workers: 0 }),
    close: () => Promise.resolve(),
  };
}

function pooledEngine(settings: SkillSettings): AnnotationEngine {
  const pool = new WorkerPool<AnnotationJob, AnnotationAnswer>({
    name: 'annotation',
    entry: WORKER_ENTRY,
    size: Math.max(1, Math.min(settings.limits.concurrency, settings.workers)),
  });
  return {
    annotate: (job, signal) => pool.run(job, signal),
    health: () => ({ workers: pool.workers, maxWorkers: pool.size }),
    close: () => pool.close(),
  };
}

/** libs/nlp's models: one NlpPipeline (models loaded once, checked) per dictionary, the plain one shared. */
export function nlpAnnotator(): Annotator {
  const plain = new NlpPipeline();
  const withDictionary = new WeakMap<readonly DictionaryEntry[], NlpPipeline>();
  return (text, { annotators, dictionary }) => {
    let pipeline = plain;
    if (dictionary.length > 0) {
      pipeline = withDictionary.get(dictionary) ?? new NlpPipeline({ dictionary });
      withDictionary.set(dictionary, pipeline);
    }
    return pipeline.annotate(text, { annotators });
  };
}

/** The entity extraction skill on loom's own models. */
export const annotationSkill: SkillModule = createAnnotationSkill();

const PIPELINE_SCHEMA = {
  type: 'object',
  required: ['name'],
  additionalProperties: false,
  properties: {
    name: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$', description: 'letters, digits, _ . - (at most 64)' },
    language: { type: 'string', minLength: 1, default: 'en' },
    textProcessor: { type: 'string', minLength: 1, default: 'loom' },
    annotators: { type: 'array', minItems: 1, items: { type: 'string' }, default: ['tokenize', 'ssplit', 'pos', 'lemma', 'ner', 'dependency'] },
    nerRegexFiles: {
      type: 'array',
      items: { type: 'string', minLength: 1 },
      default: [],
      description: 'dictionary files (TSV: term, type) in the data directory',
    },
  },
};

const ANNOTATE_SCHEMA = {
  type: 'object',
  required: ['text'],
  additionalProperties: false,
  properties: {
    text: { type: 'string', description: 'the text to annotate' },
    pipeline: { type: 'string', minLength: 1, default: 'default' },
    id: { type: 'string', description: 'returned as docId' },
  },
};

const ANNOTATE_RESPONSE = {
  ...ANNOTATION_JSON_SCHEMA,
  properties: {
    ...ANNOTATION_JSON_SCHEMA.properties,
    entities: { type: 'object', additionalProperties: { type: 'array', items: { type: 'string' } }, description: 'entity type (lower case) → mentions' },
    pipeline: { type: 'string' },
  },
};

/** The entity extraction skill (loom's models): pipelines with dictionaries, `/annotate` and `/v2/annotate`. */
export function createAnnotationSkill(options: AnnotationSkillOptions = {}): SkillModule {
  return {
    name: 'annotation',
    defaultPort: 8085,
    hostPort: 8085,
    registrationPath: '/v2/annotate',
    capability: 'ENTITY_EXTRACTION',
    async create({ settings }): Promise<SkillDefinition> {
      const store = await PipelineStore.open(settings.dataDirectory);
      const engine = options.annotator === undefined ? pooledEngine(settings) : inProcessEngine(options.annotator);
      const annotateRoute = (path: string, merged: boolean): SkillRoute => ({
        method: 'POST',
        path,
        summary: merged ? 'Annotate text; entities of several tokens merged' : 'Annotate text; entities listed per token',
        description:
          'Answers the CoreNLP-shaped annotation (sentences, tokens with lemma, pos, upos, ner, basicDependencies, entitymentions) plus `entities`: ' +
          (merged ? 'consecutive tokens of one type form one mention.' : 'one mention per token (v2: not merged).'),
        body: ANNOTATE_SCHEMA,
        response: ANNOTATE_RESPONSE,
        errors: [404, 422],
        async handler(request) {
          const body = request.body as { text: string; pipeline: string; id?: string };
          const pipeline = store.get(body.pipeline);
          const answer = await engine.annotate(await jobOf(store, pipeline, body, merged), request.signal);
          request.span.setAttributes({ 'loom.annotation.pipeline': pipeline.name, 'loom.annotation.sentences': answer.sentences });
          return 'json' in answer ? new JsonText(answer.json) : answer.body;
        },
      });
      return {
        name: 'annotation',
        title: 'loom entity extraction',
        description:
          "Annotates text with loom's NLP models (tokens, sentences, tags, lemmas, dependencies, entities) and dictionary NER from TSV files in the data directory.",
        version: '0.1.0',
        routes: [
          {
            method: 'POST',
            path: '/pipeline/new',
            summary: 'Define (or redefine) a pipeline',
            description: `Annotators: ${SUPPORTED_ANNOTATORS.join(', ')}. Pipelines are kept in the data directory and survive restarts; \`default\` always exists.`,
            body: PIPELINE_SCHEMA,
            response: { type: 'object', properties: { name: { type: 'string' }, created: { type: 'boolean' }, dictionaryTerms: { type: 'integer' } } },
            async handler(request) {
              const pipeline = request.body as Pipeline;
              const outcome = await store.put(pipeline);
              return { ...store.get(pipeline.name), ...outcome };
            },
          },
          {
            method: 'GET',
            path: '/pipelines',
            summary: 'The pipelines defined',
            response: { type: 'array', items: { type: 'object' } },
            handler: () => Promise.resolve(store.list()),
          },
          annotateRoute('/annotate', true),
          annotateRoute('/v2/annotate', false),
        ],
        health: () => ({ pipelines: store.list().length, ...engine.health() }),
        close: () => engine.close(),
      };
    },
  };
}

/** Numbers each dictionary (the same array until its pipeline is redefined), so a worker builds its pipeline once. */
const dictionaryIds = new WeakMap<readonly DictionaryEntry[], number>();
let lastDictionaryId = 0;

async function jobOf(store: PipelineStore, pipeline: Pipeline, body: { text: string; id?: string }, merged: boolean): Promise<AnnotationJob> {
  const annotators = pipeline.annotators.map((name) => (name === 'dependency' ? 'depparse' : name));
  const dictionary = annotators.includes('ner') ? await store.dictionaryOf(pipeline) : [];
  let dictionaryId = 0;
  if (dictionary.length > 0) {
    dictionaryId = dictionaryIds.get(dictionary) ?? (lastDictionaryId += 1);
    dictionaryIds.set(dictionary, dictionaryId);
  }
  return { text: body.text, annotators, dictionaryId, dictionary, pipeline: pipeline.name, merged, ...(body.id === undefined ? {} : { docId: body.id }) };
}
