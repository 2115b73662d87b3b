import { createHash } from 'node:crypto';

/**
 * How workflows and inlets are named in JetStream. A stream, a durable consumer and a subject token take letters,
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

/** The subject of one inlet of a workflow (`loom.workflow.<workflow>.inlet.<inlet>`). */
export function inletSubject(workflow: string, inlet: string): string {
  return `loom.workflow.${jetStreamToken(workflow)}.inlet.${jetStreamToken(inlet)}`;
}

/** The durable consumer of one inlet, shared by every executor that runs the workflow. */
export function inletConsumerName(inlet: string): string {
  return `inlet_${jetStreamToken(inlet)}`;
}
