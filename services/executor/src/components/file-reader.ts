import { randomUUID } from 'node:crypto';
import { copyFile, mkdir, readdir, readFile, rename, stat, unlink } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { FailedPreconditionError, ValidationError } from '@loom/domain';
import { type ComponentContext, type ComponentFactory, type Emit, type LoomMessage, type Source } from '../runtime/component.js';

/** How often the directory is listed for new files. */
export const FILE_READER_POLL_MS = 500;

/** Where files that hold no JSON object (or array of objects) are moved, inside the read directory. */
export const FAILED_DIRECTORY = 'failed';

/** Appended to a file's name once it was read, when no processed_directory is set. */
export const PROCESSED_SUFFIX = '.processed';

/** The directory a file reader is to read is missing or is not a directory. */
export class DirectoryNotFoundError extends FailedPreconditionError {
  constructor(
    /** `<instance>.options.directory`. */
    readonly option: string,
    readonly directory: string,
    options?: { cause?: unknown },
  ) {
    super(`${option}: '${directory}' is not an existing directory`, options);
  }
}

/**
 * A source that reads the JSON files ending in `suffix` dropped into `directory`, oldest first: an
 * object is one message, an array of objects one message per element. A file is moved to
 * `processed_directory` (or renamed `<file>.processed`) once every message of it was accepted;
 * a file holding anything else goes to `<directory>/failed/`.
 *
 * Delivery is at-least-once: a crash (or a stop) between the first emit of a file and its move
 * leaves the file in place, and the next run emits its messages again. Writers should write a file
 * under another name and rename it into place, or the reader may see it half-written.
 */
export const fileReaderFactory: ComponentFactory = {
  kind: 'source',
  // a bad option rejects the promise rather than throwing from create
  create: (context) => new Promise<Source>((done) => done(fileReaderSource(context))),
};

function fileReaderSource(context: ComponentContext): FileReaderSource {
  const directory = context.options.optionalString('directory');
  if (directory === undefined || directory === '') {
    throw ValidationError.of(`${context.name}.options.directory`, 'is required', 'REQUIRED');
  }
  const suffix = context.options.optionalString('suffix') ?? '.json';
  const processedOption = context.options.optionalString('processed_directory');
  const processed = processedOption === undefined || processedOption === '' ? undefined : resolve(processedOption);
  if (processed === undefined && suffix.endsWith(PROCESSED_SUFFIX)) {
    // read files are renamed <file>.processed, so they would be read again
    throw ValidationError.of(`${context.name}.options.suffix`, `may not end in ${PROCESSED_SUFFIX} unless processed_directory is set`, 'INVALID_VALUE');
  }
  if (processed === resolve(directory)) {
    throw ValidationError.of(`${context.name}.options.processed_directory`, 'must differ from directory, or its files would be read again', 'INVALID_VALUE');
  }
  return new FileReaderSource(context, resolve(directory), suffix, processed);
}

class FileReaderSource implements Source {
  /** Names already taken this run, whatever became of them: no file is read twice in one run. */
  private readonly seen = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly context: ComponentContext,
    private readonly directory: string,
    private readonly suffix: string,
    private readonly processedDirectory: string | undefined,
  ) {}

  async start(emit: Emit): Promise<void> {
    const option = `${this.context.name}.options.directory`;
    try {
      if (!(await stat(this.directory)).isDirectory()) throw new DirectoryNotFoundError(option, this.directory);
    } catch (error) {
      if (error instanceof DirectoryNotFoundError) throw error;
      throw new DirectoryNotFoundError(option, this.directory, { cause: error });
    }
    if (this.processedDirectory !== undefined) {
      try {
        await mkdir(this.processedDirectory, { recursive: true });
      } catch (error) {
        throw new FailedPreconditionError(`${this.context.name}.options.processed_directory: cannot create '${this.processedDirectory}' (${codeOf(error)})`, {
          cause: error,
        });
      }
    }
    this.polling = this.poll(emit);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.polling;
  }

  private get halted(): boolean {
    return this.stopped || this.context.signal.aborted;
  }

  private async poll(emit: Emit): Promise<void> {
    try {
      for (const file of await this.newFiles()) {
        if (this.halted) return;
        this.seen.add(file);
        await this.read(file, emit);
      }
    } catch (error) {
      const code = codeOf(error);
      if (code === 'ENOENT' || code === 'ENOTDIR') {
        // the directory itself is gone: nothing will come from it again until someone puts it back, so the run fails
        this.stopped = true;
        this.context.fail(new DirectoryNotFoundError(`${this.context.name}.options.directory`, this.directory, { cause: error }));
        return;
      }
      this.context.logger.warn({ component: this.context.name, directory: this.directory, err: error }, 'file reader could not list its directory');
    }
    if (this.halted) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.polling = this.poll(emit);
    }, FILE_READER_POLL_MS);
  }

  /** Paths of the files not seen yet whose name ends in the suffix, oldest first. */
  private async newFiles(): Promise<string[]> {
    const entries = await readdir(this.directory, { withFileTypes: true });
    const found: { path: string; modified: number }[] = [];
    for (const entry of entries) {
      if (!entry.isFile() || !entry.name.endsWith(this.suffix)) continue;
      // with an empty suffix, the files already read would match too
      if (this.processedDirectory === undefined && entry.name.endsWith(PROCESSED_SUFFIX)) continue;
      const path = join(this.directory, entry.name);
      if (this.seen.has(path)) continue;
      try {
        found.push({ path, modified: (await stat(path)).mtimeMs });
      } catch {
        // gone between the listing and the stat: someone else took it
      }
    }
    return found.sort((a, b) => a.modified - b.modified || a.path.localeCompare(b.path)).map(({ path }) => path);
  }

  private async read(file: string, emit: Emit): Promise<void> {
    const log = { component: this.context.name, file };
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (error) {
      if (codeOf(error) !== 'ENOENT') this.context.logger.warn({ ...log, err: error }, 'file reader could not read a file; it is left in place');
      return;
    }
    const bodies = bodiesOf(text);
    if (typeof bodies === 'string') {
      const target = join(this.directory, FAILED_DIRECTORY, basename(file));
      try {
        await mkdir(join(this.directory, FAILED_DIRECTORY), { recursive: true });
        await move(file, target);
        this.context.logger.warn({ ...log, movedTo: target, reason: bodies }, `file reader moved ${basename(file)} to ${FAILED_DIRECTORY}/: ${bodies}`);
      } catch (error) {
        this.context.logger.error(
          { ...log, reason: bodies, err: error },
          `file reader could not move ${basename(file)} aside (${bodies}); it is left in place`,
        );
      }
      return;
    }
    for (const body of bodies) {
      const message: LoomMessage = { id: randomUUID(), body, headers: {} };
      try {
        await emit(message);
      } catch (error) {
        // left in place: the next run emits the file again
        this.context.logger.warn({ ...log, err: error }, 'file reader stopped in the middle of a file; it is left in place');
        return;
      }
    }
    // only now, every message of the file accepted, is it marked done
    const target = this.processedDirectory === undefined ? `${file}${PROCESSED_SUFFIX}` : join(this.processedDirectory, basename(file));
    try {
      await move(file, target);
    } catch (error) {
      this.context.logger.error({ ...log, movedTo: target, err: error }, 'file reader could not move a processed file; the next run reads it again');
    }
  }
}

/** The message bodies a file holds, or why it holds none. */
function bodiesOf(text: string): Record<string, unknown>[] | string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return 'not valid JSON';
  }
  if (isObject(parsed)) return [parsed];
  if (!Array.isArray(parsed)) return `holds ${describe(parsed)}, not a JSON object or an array of objects`;
  const wrong = parsed.findIndex((element) => !isObject(element));
  if (wrong >= 0) return `element ${wrong} of its array is ${describe(parsed[wrong])}, not a JSON object`;
  return parsed as Record<string, unknown>[];
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return `a ${typeof value}`;
}

/** Renames a file, copying it when the target is on another filesystem (rename cannot cross one). */
async function move(from: string, to: string): Promise<void> {
  try {
    await rename(from, to);
  } catch (error) {
    if (codeOf(error) !== 'EXDEV') throw error;
    await copyFile(from, to);
    await unlink(from);
  }
}

function codeOf(error: unknown): string {
  return typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'string' ? error.code : 'unknown error';
}
