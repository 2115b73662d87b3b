import { createHash } from 'node:crypto';

/**
 * How workflows and their sources are named in JetStream. A stream, a durable consumer and a subject token take letters,
 * digits, `_` and `-` only (no `.`, `*`, `>`, spaces or path separators), so other names are written with those
 * replaced by `_` and a hash of the original added, so two names never share a stream.
 */

const SAFE = /^[A-Za-z0-9_-]+$/;
const MAX_READABLE = 64;

/** `name` as a JetStream name or subject token: itself when safe and short, else a readable part and a hash. */
export function jetStreamToken(name: string): string {
  if (SAFE.test(name) && name.length <= MAX_READABLE) return name;
  const readable = name.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, MAX_READABLE);
  const hash = createHash('sha256').update(name).digest('hex').slice(0, 12);
  return `${readable}_${hash}`;
}

/** The stream of a workflow's messages (`LOOM_<workflow>`). */
export function streamName(workflow: string): string {
  return `LOOM_${jetStreamToken(workflow)}`;
}

// The subject and consumer names below still say `inlet`, as they did when only inlets stored their messages: they
// name what JetStream holds, and a stream whose subjects changed would no longer take the messages it stored under them.

/** The subject of one source component of a workflow (`loom.workflow.<workflow>.inlet.<source>`). */
export function sourceSubject(workflow: string, source: string): string {
  return `loom.workflow.${jetStreamToken(workflow)}.inlet.${jetStreamToken(source)}`;
}

/** The durable consumer of one source component, shared by every executor that runs the workflow (`inlet_<source>`). */
export function sourceConsumerName(source: string): string {
  return `inlet_${jetStreamToken(source)}`;
}

/**
 * The stream a workflow's processed messages are copied into when loom.messaging.stream.keepProcessedMs is set
 * (`LOOM-KEPT_<workflow>`): the `-` keeps it apart from every workflow's `LOOM_` stream.
 */
export function keptStreamName(workflow: string): string {
  return `LOOM-KEPT_${jetStreamToken(workflow)}`;
}

const SOURCE_PREFIX = 'loom.workflow.';
const KEPT_PREFIX = 'loom.kept.';

/** The subjects of a workflow's kept stream: a processed message of a source is kept under `loom.kept.<workflow>.inlet.<source>`. */
export function keptSubjects(workflow: string): string {
  return `${KEPT_PREFIX}${jetStreamToken(workflow)}.inlet.>`;
}

/** The kept subject of a source's subject, and back: the same tokens under the other prefix. */
export function keptSubjectOf(subject: string): string {
  return subject.startsWith(SOURCE_PREFIX) ? KEPT_PREFIX + subject.slice(SOURCE_PREFIX.length) : subject;
}

/** The source subject a kept message came from. */
export function sourceSubjectOfKept(subject: string): string {
  return subject.startsWith(KEPT_PREFIX) ? SOURCE_PREFIX + subject.slice(KEPT_PREFIX.length) : subject;
}
