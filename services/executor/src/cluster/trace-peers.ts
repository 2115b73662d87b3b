import { jetStreamToken, type Messaging } from '@loom/messaging';
import { type SecretRedactor } from '@loom/telemetry';
import { type MessageEvent, type MessageTrail } from '../runtime/message-trail.js';

/** The core NATS subject one executor answers trace requests on (`loom.executor.trace.<executor id>`). */
export function traceSubject(executorId: string): string {
  return `loom.executor.trace.${jetStreamToken(executorId)}`;
}

/** A message event with the executor whose run recorded it. */
export interface ExecutorEvent extends MessageEvent {
  readonly executorId: string;
}

/** What the other executors of a cluster recorded of a message: their events, whom it asked and who did not answer. */
export interface PeerEvents {
  readonly events: readonly ExecutorEvent[];
  /** Every other executor asked, answered or not. */
  readonly asked: readonly string[];
  /** Those that did not answer within the time limit (or answered what could not be read). */
  readonly unanswered: readonly string[];
}

interface TraceRequest {
  readonly messageId: string;
  readonly workflowName: string;
}

interface TraceAnswer {
  readonly executorId: string;
  readonly events: readonly MessageEvent[];
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * `loom message trace` across the executors of a cluster (issue 50, durable mode): each executor answers, on a core NATS
 * subject of its own, with what its in-memory trail holds of a message (failures redacted by its own redactor, which
 * knows the secrets its runs opened); the executor asked by the CLI asks every other executor the status board shows
 * (`loom_executor_runs`: those that run or lately ran a workflow), all at once, each within `timeoutMs`. Nothing is
 * written per message: the trail stays in each executor's memory, and a trace gathers it when asked.
 */
export class TracePeers {
  private constructor(
    private readonly messaging: Messaging,
    private readonly executorId: string,
    private readonly peers: () => Promise<readonly string[]>,
    private readonly timeoutMs: number,
    private readonly stopAnswering: () => void,
  ) {}

  /** Starts answering this executor's trace requests from `trail` (resolves once NATS knows); `peers` lists the executors of the cluster. */
  static async open(
    messaging: Messaging,
    options: {
      readonly executorId: string;
      readonly trail: MessageTrail;
      readonly redactor: SecretRedactor;
      readonly peers: () => Promise<readonly string[]>;
      readonly timeoutMs: number;
    },
  ): Promise<TracePeers> {
    const { executorId, trail, redactor } = options;
    const stop = await messaging.reply(traceSubject(executorId), (data) => {
      const request = JSON.parse(decoder.decode(data)) as TraceRequest;
      const found = trail.find(String(request.messageId), String(request.workflowName));
      const answer: TraceAnswer = { executorId, events: (found?.events ?? []).map((event) => redacted(event, redactor)) };
      return Promise.resolve(encoder.encode(JSON.stringify(answer)));
    });
    return new TracePeers(messaging, executorId, options.peers, options.timeoutMs, stop);
  }

  /** The events every other executor of the cluster recorded of a message (of one workflow, or of every one when empty). */
  async ask(messageId: string, workflowName: string): Promise<PeerEvents> {
    const asked = (await this.peers()).filter((id) => id !== this.executorId);
    const request = encoder.encode(JSON.stringify({ messageId, workflowName } satisfies TraceRequest));
    const answers = await Promise.allSettled(asked.map((id) => this.messaging.request(traceSubject(id), request, this.timeoutMs)));
    const events: ExecutorEvent[] = [];
    const unanswered: string[] = [];
    answers.forEach((answer, index) => {
      const id = asked[index] as string;
      if (answer.status === 'rejected') {
        unanswered.push(id);
        return;
      }
      try {
        const read = JSON.parse(decoder.decode(answer.value)) as TraceAnswer;
        for (const event of read.events) events.push({ ...event, executorId: read.executorId });
      } catch {
        unanswered.push(id);
      }
    });
    return { events, asked, unanswered };
  }

  /** Stops answering (the executor leaves the cluster). */
  close(): void {
    this.stopAnswering();
  }
}

/** An event as it may leave the executor: its failure's texts redacted as the logs are. */
export function redacted<Event extends MessageEvent>(event: Event, redactor: SecretRedactor): Event {
  const { failure } = event;
  if (failure === undefined) return event;
  return {
    ...event,
    failure: { ...failure, message: redactor.redact(failure.message), ...(failure.cause === undefined ? {} : { cause: redactor.redact(failure.cause) }) },
  };
}
