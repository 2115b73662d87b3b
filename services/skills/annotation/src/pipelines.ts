import { readFile, realpath } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type DictionaryEntry, parseDictionaryTsv } from '@loom/nlp';
import { writeFileAtomic } from '@loom/foundation';
import { InvalidRequestError, NotFoundError, UnprocessableError } from '@loom/skill-service-kit';

/** An NLP pipeline as `POST /pipeline/new` defines it. */
export interface Pipeline {
  readonly name: string;
  readonly language: string;
  readonly textProcessor: string;
  readonly annotators: readonly string[];
  /** Dictionary files (TSV term/type) in the data directory. */
  readonly nerRegexFiles: readonly string[];
}

/** Annotators loom's NLP provides; `dependency` is the specification's name for `depparse`. */
export const SUPPORTED_ANNOTATORS = ['tokenize', 'ssplit', 'pos', 'lemma', 'ner', 'depparse', 'dependency'] as const;
/** Languages loom's models cover. */
export const SUPPORTED_LANGUAGES = ['en', 'english'] as const;
/** Text processor names accepted: loom's own, and those of the original service (served by loom's models all the same). */
export const TEXT_PROCESSORS = ['loom', 'stanford', 'corenlp', 'com.graphaware.nlp.processor.stanford.StanfordTextProcessor'] as const;

/** The pipeline that always exists. */
export const DEFAULT_PIPELINE: Pipeline = {
  name: 'default',
  language: 'en',
  textProcessor: 'loom',
  annotators: ['tokenize', 'ssplit', 'pos', 'lemma', 'ner', 'dependency'],
  nerRegexFiles: [],
};

/**
 * The pipeline the examples use: every annotator and the dictionary shipped with this service
 * (`dictionaries/technology.tsv`, aerospace and software terms of type TECHNOLOGY). Like `default`
 * it always exists and cannot be redefined; its dictionary is read from the service's own files,
 * not from the data directory.
 */
export const TECHNOLOGY_PIPELINE: Pipeline = { ...DEFAULT_PIPELINE, name: 'technology', nerRegexFiles: ['technology.tsv'] };

/** The pipelines that always exist, with the directory their dictionaries are read from (undefined: none). */
const BUILT_IN: ReadonlyMap<string, { readonly pipeline: Pipeline; readonly dictionaries: string | undefined }> = new Map([
  [DEFAULT_PIPELINE.name, { pipeline: DEFAULT_PIPELINE, dictionaries: undefined }],
  [TECHNOLOGY_PIPELINE.name, { pipeline: TECHNOLOGY_PIPELINE, dictionaries: fileURLToPath(new URL('../dictionaries', import.meta.url)) }],
]);

const PIPELINES_FILE = 'annotation-pipelines.json';

/** Pipelines by name, kept in a file of the data directory so they survive restarts; dictionaries loaded once and cached. */
export class PipelineStore {
  private readonly pipelines = new Map<string, Pipeline>();
  private readonly dictionaries = new Map<string, Promise<readonly DictionaryEntry[]>>();
  private writing: Promise<void> = Promise.resolve();

  private constructor(private readonly dataDirectory: string) {
    for (const { pipeline } of BUILT_IN.values()) this.pipelines.set(pipeline.name, pipeline);
  }

  /** Opens the store of a data directory, reading the pipelines saved there. */
  static async open(dataDirectory: string): Promise<PipelineStore> {
    const store = new PipelineStore(resolve(dataDirectory));
    let text: string | undefined;
    try {
      text = await readFile(join(store.dataDirectory, PIPELINES_FILE), 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    if (text !== undefined) {
      // a saved pipeline of a built-in's name (saved before it was built in) gives way to the built-in
      for (const pipeline of JSON.parse(text) as Pipeline[]) if (!BUILT_IN.has(pipeline.name)) store.pipelines.set(pipeline.name, pipeline);
    }
    return store;
  }

  /** Every pipeline, the built-in ones (`default`, `technology`) first. */
  list(): Pipeline[] {
    return [...this.pipelines.values()];
  }

  /** The named pipeline; NotFoundError (404) naming `field` when there is none. */
  get(name: string, field = 'pipeline'): Pipeline {
    const pipeline = this.pipelines.get(name);
    if (pipeline === undefined) throw new NotFoundError('unknown_pipeline', `no pipeline '${name}'; create it with POST /pipeline/new`, { field });
    return pipeline;
  }

  /** Checks a definition (annotators, language, dictionary files) and saves it; answers whether it is new. */
  async put(pipeline: Pipeline): Promise<{ created: boolean; dictionaryTerms: number }> {
    if (BUILT_IN.has(pipeline.name)) throw new InvalidRequestError(`the built-in '${pipeline.name}' pipeline cannot be redefined`, { field: 'name' });
    const language = pipeline.language.toLowerCase();
    if (!(SUPPORTED_LANGUAGES as readonly string[]).includes(language)) {
      throw new InvalidRequestError(`unknown language '${pipeline.language}'; loom's models cover: en`, { field: 'language' });
    }
    if (!(TEXT_PROCESSORS as readonly string[]).includes(pipeline.textProcessor)) {
      throw new InvalidRequestError(`unknown text processor '${pipeline.textProcessor}'; choose from ${TEXT_PROCESSORS.join(', ')}`, {
        field: 'textProcessor',
      });
    }
    pipeline.annotators.forEach((annotator, index) => {
      if (!(SUPPORTED_ANNOTATORS as readonly string[]).includes(annotator)) {
        throw new InvalidRequestError(`annotator '${annotator}' is not available; loom provides ${SUPPORTED_ANNOTATORS.join(', ')}`, {
          field: `annotators[${index}]`,
        });
      }
    });
    const dictionary = await this.loadDictionaries(pipeline.nerRegexFiles, (index) => `nerRegexFiles[${index}]`);
    const created = !this.pipelines.has(pipeline.name);
    const saved: Pipeline = { ...pipeline, language: 'en' };
    this.pipelines.set(saved.name, saved);
    this.dictionaries.set(saved.name, Promise.resolve(dictionary));
    await this.save();
    return { created, dictionaryTerms: dictionary.length };
  }

  /** The entries of the pipeline's dictionaries, the same array on every call; a file gone or broken since is 422. */
  dictionaryOf(pipeline: Pipeline): Promise<readonly DictionaryEntry[]> {
    let loading = this.dictionaries.get(pipeline.name);
    if (loading === undefined) {
      const directory = BUILT_IN.get(pipeline.name)?.dictionaries ?? this.dataDirectory;
      loading = this.loadDictionaries(pipeline.nerRegexFiles, () => 'pipeline', directory).catch((error: unknown) => {
        this.dictionaries.delete(pipeline.name);
        throw new UnprocessableError('dictionary_unavailable', `pipeline '${pipeline.name}': ${(error as Error).message}`, { field: 'pipeline', cause: error });
      });
      this.dictionaries.set(pipeline.name, loading);
    }
    return loading;
  }

  private async loadDictionaries(
    files: readonly string[],
    fieldOf: (index: number) => string,
    directory = this.dataDirectory,
  ): Promise<readonly DictionaryEntry[]> {
    const entries: DictionaryEntry[] = [];
    const root = await realpath(directory).catch(() => directory);
    for (const [index, file] of files.entries()) {
      const field = fieldOf(index);
      const path = resolve(directory, file);
      if (escapes(directory, path)) throw new InvalidRequestError(`'${file}' is outside the data directory`, { field });
      let real: string;
      try {
        real = await realpath(path);
      } catch {
        throw new InvalidRequestError(`no dictionary file '${file}' in the data directory`, { field });
      }
      // a link inside the data directory must not lead out of it
      if (escapes(root, real)) throw new InvalidRequestError(`'${file}' leads outside the data directory`, { field });
      try {
        entries.push(...parseDictionaryTsv(await readFile(real, 'utf8'), file));
      } catch (error) {
        throw new InvalidRequestError(`dictionary '${file}' is not a TSV of term and type: ${(error as Error).message}`, { field });
      }
    }
    return entries;
  }

  private save(): Promise<void> {
    const custom = this.list().filter((pipeline) => !BUILT_IN.has(pipeline.name));
    const text = `${JSON.stringify(custom, null, 2)}\n`;
    // writes are serialised so the file always holds the latest set
    this.writing = this.writing.then(() => writeFileAtomic(join(this.dataDirectory, PIPELINES_FILE), text));
    return this.writing;
  }
}

function escapes(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === '' || rel.startsWith(`..${sep}`) || rel === '..' || isAbsolute(rel);
}
