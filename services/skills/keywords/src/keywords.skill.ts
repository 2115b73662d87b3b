import { ANNOTATION_JSON_SCHEMA, type Annotation } from '@loom/domain';
import { WorkerPool } from '@loom/foundation';
import { InvalidRequestError, type SkillModule } from '@loom/skill-service-kit';
import { type KeywordsJob } from './keywords-worker.js';
import { DEFAULT_TEXTRANK_OPTIONS, type Keyword, type TextRankOptions } from './textrank.js';

// the worker runs the built module (dist), from src under the tests as from dist in a deployment
const WORKER_ENTRY = new URL('../dist/keywords-worker.js', import.meta.url);

/** Parameters that name places in a Neo4j graph; a service answering JSON has none, so they are refused rather than ignored. */
export const GRAPH_ONLY_PARAMETERS: Readonly<Record<string, string>> = {
  motherNode: 'motherNode names a graph node to attach keywords of several texts to; this service answers keywords and stores nothing',
  keywordLabel: 'keywordLabel is the label of the Keyword nodes neo4j-nlp writes; this service writes no nodes (a graph writer component does)',
};

const stringList = { type: 'array', items: { type: 'string', minLength: 1 } };

const REQUEST_SCHEMA = {
  type: 'object',
  required: ['annotatedText'],
  additionalProperties: false,
  properties: {
    annotatedText: { oneOf: [ANNOTATION_JSON_SCHEMA, { type: 'string', description: 'the annotation as JSON text' }] },
    iterations: { type: 'integer', minimum: 1, maximum: 1000, default: DEFAULT_TEXTRANK_OPTIONS.iterations },
    damp: { type: 'number', exclusiveMinimum: 0, exclusiveMaximum: 1, default: DEFAULT_TEXTRANK_OPTIONS.damp },
    threshold: { type: 'number', exclusiveMinimum: 0, default: DEFAULT_TEXTRANK_OPTIONS.threshold },
    stopwords: {
      oneOf: [{ type: 'string' }, stringList],
      description:
        "comma-separated words replacing the default list; starting with '+,' they are added to it. Setting it turns removeStopwords on, as in neo4j-nlp",
    },
    removeStopwords: { type: 'boolean' },
    respectDirections: { type: 'boolean', default: DEFAULT_TEXTRANK_OPTIONS.respectDirections },
    respectSentences: { type: 'boolean', default: DEFAULT_TEXTRANK_OPTIONS.respectSentences },
    useDependencies: { type: 'boolean', default: DEFAULT_TEXTRANK_OPTIONS.useDependencies },
    dependenciesGraph: { type: 'boolean', default: DEFAULT_TEXTRANK_OPTIONS.dependenciesGraph },
    topXTags: { type: 'number', exclusiveMinimum: 0, maximum: 1, default: DEFAULT_TEXTRANK_OPTIONS.topXTags },
    cleanKeywords: { type: 'boolean', default: DEFAULT_TEXTRANK_OPTIONS.cleanKeywords },
    admittedPOSs: stringList,
    forbiddenPOSs: stringList,
    forbiddenNEs: { ...stringList, description: 'entity types, as CoreNLP (NUMBER) or neo4j-nlp (NER_Number) names them' },
    allowedDepencies: {
      ...stringList,
      description: 'dependency relations that join a modifier to its head in key phrases (spelled as the specification spells it); default compound, amod',
    },
    motherNode: { description: 'refused: only meaningful inside Neo4j' },
    keywordLabel: { description: 'refused: only meaningful inside Neo4j' },
  },
};

const RESPONSE_SCHEMA = {
  type: 'array',
  description: 'keywords and key phrases, most relevant first',
  items: { type: 'object', required: ['value', 'relevance'], properties: { value: { type: 'string' }, relevance: { type: 'number' } } },
};

interface ExtractRequest {
  annotatedText: Annotation | string;
  iterations: number;
  damp: number;
  threshold: number;
  stopwords?: string | string[];
  removeStopwords?: boolean;
  respectDirections: boolean;
  respectSentences: boolean;
  useDependencies: boolean;
  dependenciesGraph: boolean;
  topXTags: number;
  cleanKeywords: boolean;
  admittedPOSs?: string[];
  forbiddenPOSs?: string[];
  forbiddenNEs?: string[];
  allowedDepencies?: string[];
  [parameter: string]: unknown;
}

/** The keyword extraction skill: `POST /extractKeywords {annotatedText, …parameters}` → `[{value, relevance}]`. */
export const keywordsSkill: SkillModule = {
  name: 'keywords',
  defaultPort: 8086,
  hostPort: 8086,
  registrationPath: '/extractKeywords',
  capability: 'KEYWORD_EXTRACTION',
  create({ settings }) {
    const pool = new WorkerPool<KeywordsJob, Keyword[]>({
      name: 'keyword extraction',
      entry: WORKER_ENTRY,
      size: Math.max(1, Math.min(settings.limits.concurrency, settings.workers)),
    });
    return Promise.resolve({
      name: 'keywords',
      title: 'loom keyword extraction',
      description: 'TextRank over a CoreNLP-shaped annotation, as GraphAware neo4j-nlp computes it, with its parameters and defaults.',
      version: '0.1.0',
      routes: [
        {
          method: 'POST',
          path: '/extractKeywords',
          summary: 'Keywords and key phrases of an annotated text',
          body: REQUEST_SCHEMA,
          response: RESPONSE_SCHEMA,
          async handler(request): Promise<Keyword[]> {
            const body = request.body as ExtractRequest;
            // the request is checked here, so a bad one is answered without a worker
            const annotation = readAnnotation(body.annotatedText);
            const options = optionsOf(body);
            const keywords = await pool.run({ request: request.text === undefined ? { annotation } : { text: request.text }, options }, request.signal);
            request.span.setAttribute('loom.keywords.count', keywords.length);
            return keywords;
          },
        },
      ],
      health: () => ({ workers: pool.workers, maxWorkers: pool.size }),
      close: () => pool.close(),
    });
  },
};

/** The TextRank options of a request: neo4j-nlp's defaults, each parameter given replacing its default. */
export function optionsOf(body: ExtractRequest): TextRankOptions {
  for (const [parameter, reason] of Object.entries(GRAPH_ONLY_PARAMETERS)) {
    if (body[parameter] !== undefined) throw new InvalidRequestError(reason, { field: parameter });
  }
  const defaults = DEFAULT_TEXTRANK_OPTIONS;
  let stopwords = defaults.stopwords;
  let removeStopwords = defaults.removeStopwords;
  if (body.stopwords !== undefined) {
    const words = (Array.isArray(body.stopwords) ? body.stopwords : body.stopwords.split(','))
      .map((word) => word.trim().toLowerCase())
      .filter((word) => word !== '');
    stopwords = words[0] === '+' ? new Set([...defaults.stopwords, ...words.slice(1)]) : new Set(words);
    removeStopwords = true;
  }
  if (body.removeStopwords !== undefined) removeStopwords = body.removeStopwords;
  const nonEmpty = (list: string[] | undefined, fallback: ReadonlySet<string>): ReadonlySet<string> =>
    list === undefined || list.length === 0 ? fallback : new Set(list);
  return {
    iterations: body.iterations,
    damp: body.damp,
    threshold: body.threshold,
    stopwords,
    removeStopwords,
    respectDirections: body.respectDirections,
    respectSentences: body.respectSentences,
    useDependencies: body.useDependencies,
    dependenciesGraph: body.dependenciesGraph,
    topXTags: body.topXTags,
    cleanKeywords: body.cleanKeywords,
    admittedPOSs: nonEmpty(body.admittedPOSs, defaults.admittedPOSs),
    forbiddenPOSs: nonEmpty(body.forbiddenPOSs, defaults.forbiddenPOSs),
    forbiddenNEs: nonEmpty(body.forbiddenNEs?.map(entityType), defaults.forbiddenNEs),
    allowedDependencies: nonEmpty(
      body.allowedDepencies?.map((relation) => relation.toLowerCase()),
      defaults.allowedDependencies,
    ),
  };
}

/** `NER_Number` (neo4j-nlp's label) → `NUMBER` (CoreNLP's type). */
function entityType(name: string): string {
  return name.replace(/^NER_/i, '').toUpperCase();
}

function readAnnotation(value: Annotation | string): Annotation {
  let annotation: Annotation;
  if (typeof value === 'string') {
    try {
      annotation = JSON.parse(value) as Annotation;
    } catch (error) {
      throw new InvalidRequestError(`is not JSON: ${(error as Error).message}`, { field: 'annotatedText' });
    }
    if (annotation === null || typeof annotation !== 'object' || !Array.isArray(annotation.sentences)) {
      throw new InvalidRequestError('annotatedText must be an annotation with sentences', { field: 'annotatedText.sentences' });
    }
  } else {
    annotation = value;
  }
  annotation.sentences.forEach((sentence, s) => {
    const size = sentence.tokens.length;
    (sentence.basicDependencies ?? []).forEach((arc, a) => {
      const field = `annotatedText.sentences[${s}].basicDependencies[${a}]`;
      if (arc.governor > size)
        throw new InvalidRequestError(`${field}.governor ${arc.governor} is past the sentence's ${size} tokens`, { field: `${field}.governor` });
      if (arc.dependent > size)
        throw new InvalidRequestError(`${field}.dependent ${arc.dependent} is past the sentence's ${size} tokens`, { field: `${field}.dependent` });
    });
  });
  return annotation;
}
