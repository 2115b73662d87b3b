import { type FileHandle, mkdir, open, readFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { type PromiseWithResolvers, withResolvers } from '@loom/foundation';
import { jetStreamToken } from '@loom/messaging';
import { expired, type FailureStore, merged, type PutOutcome, type StoredFailure } from './failure-store.js';

/** One line of a workflow's file: a record kept (or replaced), or the tombstone of one removed. */
type Line = { readonly put: StoredFailure } | { readonly remove: string };

/** Garbage (replaced and removed records) a file may carry before it is rewritten with its live records only. */
const COMPACT_AFTER_BYTES = 4 * 1024 * 1024;

interface Entry {
  readonly record: StoredFailure;
  /** The bytes of its line. */
  readonly bytes: number;
}

/** The records of one workflow: its file, read once, and the lines waiting to be appended. */
class WorkflowFile {
  readonly records = new Map<string, Entry>();
  liveBytes = 0;
  fileBytes = 0;
  /** The lines waiting for the next write, and the promise their appends answered (one for all of them). */
  private pending: string[] = [];
  private written: PromiseWithResolvers<void> | undefined;
  private flushing: Promise<void> | undefined;

  constructor(
    private readonly path: string,
    private handle: FileHandle,
  ) {}

  /** Reads the file's lines into the records (a torn last line, from a crash mid-write, is left out), dropping expired ones. */
  static async open(path: string, maxAgeMs: number): Promise<WorkflowFile> {
    const text = await readFile(path, 'utf8').catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return '';
      throw error;
    });
    const records = new Map<string, Entry>();
    for (const raw of text.split('\n')) {
      if (raw === '') continue;
      let line: Line;
      try {
        line = JSON.parse(raw) as Line;
      } catch {
        continue;
      }
      if ('put' in line) records.set(line.put.id, { record: line.put, bytes: Buffer.byteLength(raw) + 1 });
      else records.delete(line.remove);
    }
    const now = Date.now();
    for (const [id, entry] of records) if (expired(entry.record, maxAgeMs, now)) records.delete(id);
    // rewritten with the live records only: a torn line, tombstones and replaced records go
    const live = [...records.values()].map((entry) => lineText({ put: entry.record })).join('');
    if (live.length !== text.length) await writeAtomically(path, live);
    const file = new WorkflowFile(path, await open(path, 'a'));
    for (const [id, entry] of records) file.records.set(id, entry);
    file.liveBytes = Buffer.byteLength(live);
    file.fileBytes = file.liveBytes;
    return file;
  }

  /** Appends lines (each its JSON and a newline); resolves once they are on disk (one write and one fsync for all the lines waiting together). */
  append(text: string): Promise<void> {
    this.pending.push(text);
    // one promise for the lines that share a write: a busy pipeline keeps thousands of failures a second
    const written = (this.written ??= withResolvers());
    this.flushing ??= this.flush();
    return written.promise;
  }

  private async flush(): Promise<void> {
    while (this.pending.length > 0) {
      const text = this.pending.join('');
      const written = this.written;
      this.pending = [];
      this.written = undefined;
      try {
        await this.handle.write(text, null, 'utf8');
        await this.handle.datasync();
        this.fileBytes += Buffer.byteLength(text);
        written?.resolve();
      } catch (error) {
        written?.reject(error);
      }
      if (this.wasteful) await this.compact().catch(() => undefined);
    }
    this.flushing = undefined;
  }

  /** Whether the file carries enough garbage (replaced and removed records) to be rewritten. */
  private get wasteful(): boolean {
    return this.fileBytes - this.liveBytes > COMPACT_AFTER_BYTES && this.fileBytes > 2 * this.liveBytes;
  }

  /**
   * Rewrites the file with the records in memory, between two flushes (so no append runs meanwhile): a line still
   * waiting is appended after it and changes nothing (a put again, or the tombstone of a record already left out).
   */
  private async compact(): Promise<void> {
    const live = [...this.records.values()].map((entry) => lineText({ put: entry.record })).join('');
    await this.handle.close();
    await writeAtomically(this.path, live);
    this.handle = await open(this.path, 'a');
    this.fileBytes = Buffer.byteLength(live);
  }

  async close(): Promise<void> {
    await this.flushing;
    await this.handle.close();
  }
}

/** A line of the file as written: its JSON and a newline. */
function lineText(line: Line): string {
  return 'put' in line ? putLineText(line.put) : JSON.stringify(line) + '\n';
}

const quoted = JSON.stringify;

/**
 * A put's line, `{"put":<record>}` and a newline, built field by field: the bytes JSON.stringify writes for a record
 * as the keeper makes it (a test holds it), at about half the cost of its walk of the record's dozen properties, which
 * was the largest part of a failure's keeping after the fsync (issue 50's measure).
 */
export function putLineText(record: StoredFailure): string {
  const { id, workflow, workflowVersion, component, instance, failure, attempts, firstFailed, lastFailed, messageId, message, traceId } = record;
  let text =
    `{"put":{"id":${quoted(id)},"workflow":${quoted(workflow)},"workflowVersion":${workflowVersion},"component":${quoted(component)},` +
    `"instance":${quoted(instance)},"failure":${quoted(failure)},"attempts":${attempts},"firstFailed":${quoted(firstFailed)},` +
    `"lastFailed":${quoted(lastFailed)},"messageId":${quoted(messageId)}`;
  if (message !== undefined) text += `,"message":${quoted(message)}`;
  if (traceId !== undefined) text += `,"traceId":${quoted(traceId)}`;
  return text + '}}\n';
}

async function writeAtomically(path: string, text: string): Promise<void> {
  // rename is atomic only within one filesystem, so the temp file lives beside the target
  const temp = `${path}.${process.pid}.tmp`;
  const handle = await open(temp, 'w');
  try {
    await handle.writeFile(text, 'utf8');
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(temp, path);
}

/** Options of the file store. */
export interface FileFailureStoreOptions {
  /** loom.executor.failures.directory. */
  readonly directory: string;
  /** Most bytes of live records per workflow (loom.executor.failures.maxBytes). */
  readonly maxBytes: number;
  /** loom.executor.failures.maxAgeMs; 0: no limit. */
  readonly maxAgeMs: number;
}

/**
 * The failure store of memory mode: per workflow an append-only file of JSON lines (`<directory>/<workflow>.jsonl`),
 * each put or removal one line, on disk (fsync) before it is answered, with the puts and removals that arrive together
 * sharing one write and one fsync. The records are read into memory when a workflow's file is first used; the file is
 * rewritten with its live records only (atomically, through a temp file and a rename) when it is opened carrying
 * garbage or a torn last line from a crash, and between two writes once replaced and removed records take more than
 * 4 MiB and more than the live ones. It survives a restart of loom; it is this executor's alone.
 */
export class FileFailureStore implements FailureStore {
  private readonly files = new Map<string, Promise<WorkflowFile>>();
  /** The files opened so far, for a put that need not wait a turn for its file. */
  private readonly opened = new Map<string, WorkflowFile>();

  constructor(private readonly options: FileFailureStoreOptions) {}

  put(record: StoredFailure): Promise<PutOutcome> {
    return this.putMany([record]).then((outcomes) => outcomes[0] ?? 'kept');
  }

  putMany(records: readonly StoredFailure[]): Promise<PutOutcome[]> {
    const workflow = records[0]?.workflow;
    if (workflow === undefined) return Promise.resolve([]);
    // a run keeps one workflow's failures; records of several workflows are kept per workflow
    if (records.some((record) => record.workflow !== workflow)) return this.putPerWorkflow(records);
    const opened = this.opened.get(workflow);
    return opened === undefined ? this.file(workflow).then((file) => this.putIn(file, records)) : this.putIn(opened, records);
  }

  /** Merges the records into the file's, appends their lines as one text (one write, one fsync), answers once on disk. */
  private putIn(file: WorkflowFile, records: readonly StoredFailure[]): Promise<PutOutcome[]> {
    const outcomes: PutOutcome[] = [];
    let text = '';
    for (const record of records) {
      const earlier = file.records.get(record.id);
      const kept = merged(earlier?.record, record);
      const line = lineText({ put: kept });
      const bytes = Buffer.byteLength(line);
      const live = file.liveBytes - (earlier?.bytes ?? 0) + bytes;
      if (live > this.options.maxBytes) {
        outcomes.push('full');
        continue;
      }
      file.records.set(record.id, { record: kept, bytes });
      file.liveBytes = live;
      text += line;
      outcomes.push('kept');
    }
    return text === '' ? Promise.resolve(outcomes) : file.append(text).then(() => outcomes);
  }

  private async putPerWorkflow(records: readonly StoredFailure[]): Promise<PutOutcome[]> {
    const outcomes: PutOutcome[] = [];
    for (const record of records) outcomes.push(...(await this.putMany([record])));
    return outcomes;
  }

  async list(workflow: string): Promise<StoredFailure[]> {
    const file = await this.file(workflow);
    const now = Date.now();
    return [...file.records.values()].flatMap((entry) => (expired(entry.record, this.options.maxAgeMs, now) ? [] : [entry.record]));
  }

  async get(workflow: string, id: string): Promise<StoredFailure | undefined> {
    const record = (await this.file(workflow)).records.get(id)?.record;
    return record === undefined || expired(record, this.options.maxAgeMs, Date.now()) ? undefined : record;
  }

  async remove(workflow: string, ids: readonly string[]): Promise<number> {
    const file = await this.file(workflow);
    const removals: Promise<void>[] = [];
    for (const id of new Set(ids)) {
      const entry = file.records.get(id);
      if (entry === undefined) continue;
      file.records.delete(id);
      file.liveBytes -= entry.bytes;
      removals.push(file.append(lineText({ remove: id })));
    }
    await Promise.all(removals);
    return removals.length;
  }

  async close(): Promise<void> {
    const files = [...this.files.values()];
    this.files.clear();
    this.opened.clear();
    await Promise.all(files.map(async (file) => (await file).close()));
  }

  private file(workflow: string): Promise<WorkflowFile> {
    let file = this.files.get(workflow);
    if (file === undefined) {
      file = this.openFile(workflow);
      this.files.set(workflow, file);
      file.then(
        (opened) => {
          if (this.files.get(workflow) === file) this.opened.set(workflow, opened);
        },
        // a file that could not be opened is tried again at the next use
        () => this.files.delete(workflow),
      );
    }
    return file;
  }

  private async openFile(workflow: string): Promise<WorkflowFile> {
    await mkdir(this.options.directory, { recursive: true });
    return WorkflowFile.open(join(this.options.directory, `${jetStreamToken(workflow)}.jsonl`), this.options.maxAgeMs);
  }
}
