import { type FileHandle, mkdir, open, rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { FailedPreconditionError, UnavailableError } from '@loom/domain';
import { type PromiseWithResolvers, syncDirectory, withResolvers } from '@loom/foundation';
import { jetStreamToken } from '@loom/messaging';
import { expired, type FailureStore, merged, type PutOutcome, type StoredFailure } from './failure-store.js';
import { readAt, SCAN_CHUNK_BYTES, type ScannedLine, scanLines } from './line-file.js';

/** One line of a workflow's file: a record kept (or replaced), or the tombstone of one removed. */
type Line = { readonly put: StoredFailure } | { readonly remove: string };

/** Garbage (replaced and removed records) a file may carry before it is rewritten with its live records only. */
const COMPACT_AFTER_BYTES = 4 * 1024 * 1024;

/** A reader retries this often when the file was rewritten under it (a compaction moved the lines it was reading). */
const READ_ATTEMPTS = 3;

/**
 * What the store holds in memory of a kept record: what a new failure of it merges with, and where its line is. The
 * record itself stays on disk: 100,000 records held 73.5 MB of heap, their index 15.2 MB, so a full store (256 MiB of
 * lines a workflow) no longer costs several times its size in memory.
 */
interface IndexEntry {
  readonly id: string;
  readonly attempts: number;
  readonly firstFailed: string;
  /** The bytes of its line, newline included. */
  readonly bytes: number;
  /** Where its line starts in the file; until its batch is written, where it starts in the batch's text. */
  offset: number;
  /** Whether its batch is written, so `offset` is the file's. */
  written: boolean;
}

/** Lines appended together: their text, its bytes, the index entries of the puts among them, and how to take back their change to the index when the write fails. */
interface Batch {
  readonly text: string;
  readonly bytes: number;
  readonly entries: readonly IndexEntry[];
  readonly undo: () => void;
}

/** The records of one workflow: its file, the index of its live records, and the lines waiting to be appended. */
class WorkflowFile {
  readonly index = new Map<string, IndexEntry>();
  liveBytes = 0;
  /** Bytes in the file: where the next write lands. */
  private fileBytes = 0;
  /** Counts the file's rewrites: a reader that saw it change reads again (its offsets are the old file's). */
  private generation = 0;
  private pending: Batch[] = [];
  /** The promise the lines waiting for the next write answer (one for all of them). */
  private written: PromiseWithResolvers<void> | undefined;
  private flushing: Promise<void> | undefined;
  /** Lines written since the last fsync, and the timer of the next one (syncIntervalMs > 0). */
  private unsynced = false;
  private syncDue = false;
  private syncTimer: NodeJS.Timeout | undefined;
  /** The handle is of a file a rewrite renamed over: the next write opens the path again. */
  private stale = false;

  private constructor(
    private readonly path: string,
    private handle: FileHandle,
    private readonly syncIntervalMs: number,
  ) {}

  /**
   * Indexes the file's lines (a torn last line, from a crash mid-write, is left out), dropping expired records; a file
   * carrying anything but its live records is rewritten with them first.
   */
  static async open(path: string, maxAgeMs: number, syncIntervalMs: number): Promise<WorkflowFile> {
    const index = new Map<string, IndexEntry>();
    const now = Date.now();
    const size = await scanLines(path, ({ text, offset, bytes }) => {
      const line = parsedLine(text);
      if (line === undefined) return;
      if ('remove' in line) index.delete(line.remove);
      else if (expired(line.put, maxAgeMs, now)) index.delete(line.put.id);
      else index.set(line.put.id, entryOf(line.put, bytes + 1, offset, true));
    });
    const file = new WorkflowFile(path, await open(path, 'a'), syncIntervalMs);
    for (const [id, entry] of index) {
      file.index.set(id, entry);
      file.liveBytes += entry.bytes;
    }
    file.fileBytes = size;
    // rewritten with the live records only: a torn last line, tombstones, replaced and expired records go
    if (file.liveBytes !== size) await file.compact();
    return file;
  }

  /** Appends lines (each its JSON and a newline); resolves once written (one write for all the lines waiting together) and, with syncIntervalMs 0, fsync'd. */
  append(batch: Batch): Promise<void> {
    this.pending.push(batch);
    const written = (this.written ??= withResolvers());
    this.flushing ??= this.flush();
    return written.promise;
  }

  /** The record of an indexed id, read from its line; undefined when it is not kept. */
  async read(id: string): Promise<StoredFailure | undefined> {
    for (let attempt = 1; attempt <= READ_ATTEMPTS; attempt++) {
      await this.settled();
      const entry = this.index.get(id);
      if (entry === undefined) return undefined;
      const generation = this.generation;
      const text = await readAt(this.path, entry.offset, entry.bytes - 1);
      const line = parsedLine(text);
      if (line !== undefined && 'put' in line && line.put.id === id) return line.put;
      // the file was rewritten between finding the line and reading it: found again in the new one
      if (generation === this.generation)
        throw new FailedPreconditionError(`failure store ${this.path}: the line of record ${id} at byte ${entry.offset} is not its record`);
    }
    throw new UnavailableError(`failure store ${this.path}: record ${id} could not be read while the file was being rewritten`);
  }

  /** Every live record, read from the file. */
  async readAll(): Promise<StoredFailure[]> {
    for (let attempt = 1; attempt <= READ_ATTEMPTS; attempt++) {
      await this.settled();
      // nothing live: the file (tombstones, replaced lines) need not be read
      if (this.index.size === 0) return [];
      const generation = this.generation;
      const records: StoredFailure[] = [];
      await scanLines(this.path, (line) => {
        // only a live record's line is parsed: replaced and removed ones are left unread
        if (liveEntry(this.index, line) === undefined) return;
        const parsed = parsedLine(line.text);
        if (parsed !== undefined && 'put' in parsed) records.push(parsed.put);
      });
      if (generation === this.generation) return records;
    }
    throw new UnavailableError(`failure store ${this.path}: its records could not be read while the file was being rewritten`);
  }

  async close(): Promise<void> {
    clearTimeout(this.syncTimer);
    this.syncTimer = undefined;
    await this.settled();
    if (this.stale) return;
    if (this.unsynced) await this.handle.datasync();
    this.unsynced = false;
    await this.handle.close();
  }

  /** Resolves once no write, fsync or rewrite is under way (appends made meanwhile included). */
  private async settled(): Promise<void> {
    while (this.flushing !== undefined) await this.flushing;
  }

  private async flush(): Promise<void> {
    while (this.pending.length > 0 || this.syncDue) {
      if (this.pending.length > 0) await this.writePending();
      if (this.syncDue) {
        this.syncDue = false;
        this.unsynced = false;
        await this.handle.datasync().catch(() => {
          this.unsynced = true;
        });
      }
      if (this.wasteful) await this.compact().catch(() => undefined);
    }
    this.flushing = undefined;
  }

  /** Writes the waiting batches as one text, their entries' offsets made the file's; a failed write is cut off the file. */
  private async writePending(): Promise<void> {
    const batches = this.pending;
    const written = this.written;
    this.pending = [];
    this.written = undefined;
    let at = this.fileBytes;
    for (const batch of batches) {
      for (const entry of batch.entries) {
        entry.offset += at;
        entry.written = true;
      }
      at += batch.bytes;
    }
    try {
      if (this.stale) await this.reopen();
      await this.handle.write(batches.length === 1 ? (batches[0] as Batch).text : batches.map((batch) => batch.text).join(''), null, 'utf8');
      if (this.syncIntervalMs === 0) await this.handle.datasync();
      else this.syncLater();
      this.fileBytes = at;
      written?.resolve();
    } catch (error) {
      // nothing of these batches is kept: half a line would join the next one, and the index goes back to the file's
      await this.handle.truncate(this.fileBytes).catch(() => undefined);
      for (const batch of batches.reverse()) batch.undo();
      written?.reject(error);
    }
  }

  /** Schedules the fsync of what was written, syncIntervalMs from the first write it covers. */
  private syncLater(): void {
    this.unsynced = true;
    this.syncTimer ??= setTimeout(() => {
      this.syncTimer = undefined;
      this.syncDue = true;
      this.flushing ??= this.flush();
    }, this.syncIntervalMs).unref();
  }

  /** Whether the file carries enough garbage (replaced and removed records) to be rewritten. */
  private get wasteful(): boolean {
    return this.fileBytes - this.liveBytes > COMPACT_AFTER_BYTES && this.fileBytes > 2 * this.liveBytes;
  }

  /**
   * Rewrites the file with its live records' lines (atomically: a temp file beside it, fsync, rename, the directory's
   * fsync), between two writes. A line appended after is unaffected: its offset is made when it is written. A record
   * replaced or removed meanwhile keeps its new entry (its copied line is garbage, outranked by the line that follows).
   */
  private async compact(): Promise<void> {
    const temp = `${this.path}.${process.pid}.tmp`;
    const moved = new Map<IndexEntry, number>();
    const out = await open(temp, 'w');
    let bytes = 0;
    try {
      let chunk = '';
      let chunkBytes = 0;
      await scanLines(this.path, async (line) => {
        const entry = liveEntry(this.index, line);
        if (entry === undefined) return;
        moved.set(entry, bytes);
        chunk += line.text + '\n';
        bytes += entry.bytes;
        chunkBytes += entry.bytes;
        if (chunkBytes >= SCAN_CHUNK_BYTES) {
          await out.write(chunk, null, 'utf8');
          chunk = '';
          chunkBytes = 0;
        }
      });
      if (chunk !== '') await out.write(chunk, null, 'utf8');
      await out.sync();
      await out.close();
      await rename(temp, this.path);
    } catch (error) {
      await out.close().catch(() => undefined);
      await rm(temp, { force: true });
      throw error;
    }
    for (const [entry, offset] of moved) entry.offset = offset;
    this.fileBytes = bytes;
    this.generation++;
    this.unsynced = false;
    // the handle is the old file's now: appends go to the new one
    this.stale = true;
    await this.reopen();
    await syncDirectory(dirname(this.path));
  }

  /** Opens the path for appending again, after a rewrite renamed a new file over it. */
  private async reopen(): Promise<void> {
    await this.handle.close().catch(() => undefined);
    this.handle = await open(this.path, 'a');
    this.stale = false;
  }
}

/** The index entry of a put's line. */
function entryOf(record: StoredFailure, bytes: number, offset: number, written: boolean): IndexEntry {
  return { id: record.id, attempts: record.attempts, firstFailed: record.firstFailed, bytes, offset, written };
}

/** A line's content, or undefined for a line that is not whole JSON (a torn one). */
function parsedLine(text: string): Line | undefined {
  try {
    return JSON.parse(text) as Line;
  } catch {
    return undefined;
  }
}

/**
 * The index entry a scanned line is the line of (a live record's), or undefined for a replaced or removed record's
 * line, a tombstone, or a line of a record whose new line waits for the next write.
 */
function liveEntry(index: ReadonlyMap<string, IndexEntry>, { text, offset, bytes }: ScannedLine): IndexEntry | undefined {
  const id = idOfLine(text);
  const entry = id === undefined ? undefined : index.get(id);
  return entry !== undefined && entry.written && entry.offset === offset && entry.bytes === bytes + 1 ? entry : undefined;
}

/** The record id of a put's line, read from its start (`{"put":{"id":"<hex>",`) without parsing the rest unless it is escaped. */
function idOfLine(text: string): string | undefined {
  if (!text.startsWith(PUT_PREFIX)) return undefined;
  const end = text.indexOf('"', PUT_PREFIX.length);
  if (end < 0) return undefined;
  const id = text.slice(PUT_PREFIX.length, end);
  if (!id.includes('\\')) return id;
  const line = parsedLine(text);
  return line !== undefined && 'put' in line ? line.put.id : undefined;
}

const PUT_PREFIX = '{"put":{"id":"';

/** The tombstone line of a removed record, as written: its JSON and a newline. */
function removeLineText(id: string): string {
  return JSON.stringify({ remove: id } satisfies Line) + '\n';
}

const quoted = JSON.stringify;

/**
 * A put's line, `{"put":<record>}` and a newline, built field by field: the bytes JSON.stringify writes for a record
 * as the keeper makes it (a test holds it), at about half the cost of its walk of the record's dozen properties, which
 * was the largest part of a failure's keeping after the fsync (issue 50's measure). The id comes first: a scan reads it
 * from there (idOfLine).
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

/** Options of the file store. */
export interface FileFailureStoreOptions {
  /** loom.executor.failures.directory. */
  readonly directory: string;
  /** Most bytes of live records per workflow (loom.executor.failures.maxBytes). */
  readonly maxBytes: number;
  /** loom.executor.failures.maxAgeMs; 0: no limit. */
  readonly maxAgeMs: number;
  /** loom.executor.failures.syncIntervalMs: most ms between a write and its fsync; 0: fsync'd before a put is answered. */
  readonly syncIntervalMs: number;
}

/**
 * The failure store of memory mode: per workflow an append-only file of JSON lines (`<directory>/<workflow>.jsonl`),
 * each put or removal one line, written before it is answered, with the puts and removals that arrive together sharing
 * one write. The file is fsync'd at most syncIntervalMs after a write (and at close), or before each answer with 0.
 * Memory holds an index of the live records (id, attempts, first failure, where its line is); a record is read from
 * its line. The file is rewritten with its live records only (atomically, through a temp file and a rename) when it is
 * opened carrying anything else (a torn last line from a crash, replaced, removed or expired records), and between
 * two writes once replaced and removed records take more than 4 MiB and more than the live ones. It survives a restart
 * of loom; it is this executor's alone.
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

  /** Merges the records into the file's, appends their lines as one text (one write), answers once written. */
  private putIn(file: WorkflowFile, records: readonly StoredFailure[]): Promise<PutOutcome[]> {
    const outcomes: PutOutcome[] = [];
    const entries: IndexEntry[] = [];
    /** What each entry replaced in the index, to put back when the write fails. */
    const replaced: (IndexEntry | undefined)[] = [];
    let text = '';
    let batchBytes = 0;
    for (const record of records) {
      const earlier = file.index.get(record.id);
      const kept = merged(earlier, record);
      const line = putLineText(kept);
      const bytes = Buffer.byteLength(line);
      const live = file.liveBytes - (earlier?.bytes ?? 0) + bytes;
      if (live > this.options.maxBytes) {
        outcomes.push('full');
        continue;
      }
      const entry = entryOf(kept, bytes, batchBytes, false);
      file.index.set(record.id, entry);
      file.liveBytes = live;
      entries.push(entry);
      replaced.push(earlier);
      text += line;
      batchBytes += bytes;
      outcomes.push('kept');
    }
    if (text === '') return Promise.resolve(outcomes);
    const undo = (): void => {
      for (let index = entries.length - 1; index >= 0; index--) {
        const entry = entries[index] as IndexEntry;
        if (file.index.get(entry.id) !== entry) continue;
        const earlier = replaced[index];
        file.liveBytes += (earlier?.bytes ?? 0) - entry.bytes;
        if (earlier === undefined) file.index.delete(entry.id);
        else file.index.set(entry.id, earlier);
      }
    };
    return file.append({ text, bytes: batchBytes, entries, undo }).then(() => outcomes);
  }

  private async putPerWorkflow(records: readonly StoredFailure[]): Promise<PutOutcome[]> {
    const outcomes: PutOutcome[] = [];
    for (const record of records) outcomes.push(...(await this.putMany([record])));
    return outcomes;
  }

  async list(workflow: string): Promise<StoredFailure[]> {
    const now = Date.now();
    return (await (await this.file(workflow)).readAll()).filter((record) => !expired(record, this.options.maxAgeMs, now));
  }

  async get(workflow: string, id: string): Promise<StoredFailure | undefined> {
    const record = await (await this.file(workflow)).read(id);
    return record === undefined || expired(record, this.options.maxAgeMs, Date.now()) ? undefined : record;
  }

  /** Removes records (their tombstone lines one write); answers how many were there. */
  async remove(workflow: string, ids: readonly string[]): Promise<number> {
    const file = await this.file(workflow);
    let text = '';
    const removed: IndexEntry[] = [];
    for (const id of new Set(ids)) {
      const entry = file.index.get(id);
      if (entry === undefined) continue;
      file.index.delete(id);
      file.liveBytes -= entry.bytes;
      text += removeLineText(id);
      removed.push(entry);
    }
    if (text === '') return 0;
    const undo = (): void => {
      for (const entry of removed) {
        if (file.index.has(entry.id)) continue;
        file.index.set(entry.id, entry);
        file.liveBytes += entry.bytes;
      }
    };
    await file.append({ text, bytes: Buffer.byteLength(text), entries: [], undo });
    return removed.length;
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
    const path = join(this.options.directory, `${jetStreamToken(workflow)}.jsonl`);
    return WorkflowFile.open(path, this.options.maxAgeMs, this.options.syncIntervalMs);
  }
}
