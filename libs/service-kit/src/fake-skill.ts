import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { type AddressInfo } from 'node:net';

/** One request a fake skill received. */
export interface FakeSkillRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: Buffer;
}

/**
 * What a fake skill answers: a status and a JSON body (or `text`, sent as written), or `hang` to answer nothing until the
 * client gives up.
 */
export type FakeSkillAnswer = { readonly status: number; readonly body?: unknown; readonly text?: string; readonly headers?: Record<string, string> } | 'hang';

/** A real HTTP server on loopback playing a skill microservice, counting what reaches it. */
export interface FakeSkill {
  /** `http://127.0.0.1:<port>`. */
  readonly origin: string;
  readonly requests: FakeSkillRequest[];
  /** Requests under way now (received, not yet answered, connection still open) and the most there ever were. */
  readonly inFlight: number;
  readonly maxInFlight: number;
  /** Replaces the handler. */
  answerWith(handler: (request: FakeSkillRequest) => FakeSkillAnswer | Promise<FakeSkillAnswer>): void;
  close(): Promise<void>;
}

/**
 * Starts a fake skill on 127.0.0.1:0. A request counts as in flight from its arrival until its answer is written or
 * its connection closes (a client that timed out); hanging requests are ended when the server closes.
 */
export async function startFakeSkill(handler: (request: FakeSkillRequest) => FakeSkillAnswer | Promise<FakeSkillAnswer>): Promise<FakeSkill> {
  let current = handler;
  const requests: FakeSkillRequest[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const hanging = new Set<ServerResponse>();
  const server: Server = createServer((req, res) => {
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    let counted = true;
    const done = (): void => {
      if (!counted) return;
      counted = false;
      inFlight--;
    };
    res.on('close', done);
    res.on('finish', done);
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const request: FakeSkillRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) };
      requests.push(request);
      void Promise.resolve(current(request)).then(
        (answer) => {
          if (answer === 'hang') {
            hanging.add(res);
            res.on('close', () => hanging.delete(res));
            return;
          }
          const body = answer.text ?? (answer.body === undefined ? '' : JSON.stringify(answer.body));
          res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
          res.end(body);
        },
        (error: unknown) => {
          res.writeHead(500, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: 'fake skill handler failed', message: String(error) }));
        },
      );
    });
  });
  // a client that reuses a kept-alive connection the server just closed would see a reset: keep them open longer
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    requests,
    get inFlight() {
      return inFlight;
    },
    get maxInFlight() {
      return maxInFlight;
    },
    answerWith(next) {
      current = next;
    },
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
