import { type ServerResponse } from 'node:http';
import { type ClientReadableStream } from '@grpc/grpc-js';
import { type WatchResponse, type WatchRunResponse } from '@loom/contracts';
import { ApiError, readJsonBody, SECURITY_HEADERS, sendJson, sendNoContent, stringField, stringListField } from './http-errors.js';
import { auditEntry, failureFilter, failureView, listFailures, listSchedules, listSkills, queryAudit, verifyAudit } from './operation-views.js';
import { type Route, type RouteContext } from './routes.js';
import { type Session } from './sessions.js';
import { anonymousOwner } from './sign-in.js';
import { countsEvent, stateName } from './workflow-views.js';
import { type ConsoleServer } from './console-server.js';

/** How often a workflow's event stream reads its counters (WatchRun reports state and errors at once; counters come from status). */
export const COUNTS_INTERVAL_MS = 250;
/** A comment line this often keeps an idle event stream open through proxies. */
const HEARTBEAT_MS = 15_000;
/** Ids a retry or discard takes at once. */
const MAX_IDS = 1000;

/** The signed-in session of a route that requires one (the server refused the request without it). */
function sessionOf(context: RouteContext): Session {
  if (context.session === undefined) throw new ApiError(401, 'not signed in');
  return context.session;
}

/** Runs a call for the session; a token loom no longer takes ends the session. */
async function forSession<T>(console: ConsoleServer, session: Session, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    console.forgetOnRefusal(session, error);
    throw error;
  }
}

/** An open server-sent-events answer. */
interface EventStream {
  send(event: string, data: unknown): void;
  /** Whether the browser is gone or the stream ended. */
  readonly closed: boolean;
  end(): void;
  /** Resolves when the stream ends, for any reason. */
  readonly ended: Promise<void>;
}

function openEventStream(console: ConsoleServer, response: ServerResponse): EventStream {
  response.writeHead(200, {
    ...SECURITY_HEADERS,
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    // nginx and other proxies pass each event on at once
    'x-accel-buffering': 'no',
  });
  response.write('retry: 2000\n\n');
  let closed = false;
  let resolveEnded: () => void = () => undefined;
  const ended = new Promise<void>((resolve) => (resolveEnded = resolve));
  const heartbeat = setInterval(() => response.write(': keep-alive\n\n'), HEARTBEAT_MS);
  heartbeat.unref();
  const finish = (): void => {
    if (closed) return;
    closed = true;
    clearInterval(heartbeat);
    untrack();
    response.end();
    resolveEnded();
  };
  const untrack = console.trackStream(finish);
  response.once('close', finish);
  return {
    send(event, data) {
      if (!closed) response.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    },
    get closed() {
      return closed;
    },
    end: finish,
    ended,
  };
}

/** The error event of a stream, then its end. */
function endWithError(stream: EventStream, error: unknown): void {
  const apiError = error instanceof ApiError ? error : new ApiError(502, 'the event stream failed');
  stream.send('error', { error: { status: apiError.status, message: apiError.message } });
  stream.end();
}

/** GET /api/workflows/{name}/events: `counts` whenever a component's counters or the run's state change, `run` for each WatchRun event. */
async function workflowEvents(console: ConsoleServer, context: RouteContext): Promise<void> {
  const session = sessionOf(context);
  const name = context.params['name'] as string;
  // the workflow must exist and the user may read it before the stream opens (then errors are answered as statuses)
  const nodes = await forSession(console, session, () => console.views.nodesOf(name, session.token));
  const stream = openEventStream(console, context.response);
  let last = '';
  let watch: ClientReadableStream<WatchRunResponse> | undefined;
  let reading = false;
  const readCounts = async (): Promise<void> => {
    if (reading || stream.closed) return;
    reading = true;
    try {
      if (console.sessions.get(session.id) === undefined) {
        stream.send('signed-out', { error: { status: 401, message: 'the session has ended: sign in again' } });
        stream.end();
        return;
      }
      const running = await console.views.status(name, session.token);
      const event = running === undefined ? { components: {}, state: 'STOPPED' } : countsEvent(running.components, running.state, nodes);
      const text = JSON.stringify(event);
      if (text !== last) {
        last = text;
        stream.send('counts', event);
      }
      // a run that started after the stream opened is watched from then on
      if (watch === undefined && running !== undefined && (event.state === 'RUNNING' || event.state === 'PAUSED' || event.state === 'STARTING')) openWatch();
    } catch (error) {
      console.forgetOnRefusal(session, error);
      endWithError(stream, error);
    } finally {
      reading = false;
    }
  };
  const openWatch = (): void => {
    const call = console.loom.stream('executor', session.token, (client, metadata) => client.watchRun({ name }, metadata));
    watch = call;
    call.on('data', (event: WatchRunResponse) => {
      stream.send('run', {
        time: event.time?.toISOString(),
        state: stateName(event.state),
        ...(event.component ? { component: event.component } : {}),
        ...(event.error ? { error: event.error } : {}),
        ...(event.executorId ? { executor: event.executorId } : {}),
      });
      void readCounts();
    });
    // the run ended (or had not started): the status poll opens a new watch when it runs again
    const closed = (): void => {
      if (watch === call) watch = undefined;
    };
    call.on('error', closed);
    call.on('end', closed);
  };
  await readCounts();
  const timer = setInterval(() => void readCounts(), COUNTS_INTERVAL_MS);
  await stream.ended;
  clearInterval(timer);
  watch?.cancel();
}

/** GET /api/audit/events: each audit entry as it is appended (event `entry`). */
async function auditEvents(console: ConsoleServer, context: RouteContext): Promise<void> {
  const session = sessionOf(context);
  // one query first, so that a user without the right gets 403 as a status rather than a stream that ends at once
  await forSession(console, session, () => console.loom.unary('audit', 'query', { types: [], workflowName: '', pageSize: 1, pageToken: '' }, session.token));
  const stream = openEventStream(console, context.response);
  const call = console.loom.stream('audit', session.token, (client, metadata) => client.watch({ types: [], workflowName: '', fromSequence: 0 }, metadata));
  call.on('data', (answer: WatchResponse) => {
    if (answer.event !== undefined) stream.send('entry', auditEntry(answer.event));
  });
  call.on('error', (error: Error & { code?: number }) => {
    // CANCELLED is this stream's own end
    if (error.code !== 1) endWithError(stream, new ApiError(502, 'the audit service ended the live tail'));
  });
  call.on('end', () => stream.end());
  await stream.ended;
  call.cancel();
}

/** POST /api/workflows/{name}/{action}: start, stop, pause or resume, as the user. */
function workflowAction(console: ConsoleServer, action: 'start' | 'stop' | 'pause' | 'resume'): Route {
  const method = ({ start: 'startWorkflow', stop: 'stopWorkflow', pause: 'pauseWorkflow', resume: 'resumeWorkflow' } as const)[action];
  return {
    method: 'POST',
    path: `/api/workflows/{name}/${action}`,
    handle: async (context) => {
      const session = sessionOf(context);
      const name = context.params['name'] as string;
      const answer = await forSession(console, session, () => console.loom.unary('executor', method, { name }, session.token));
      sendJson(context.response, 200, { state: stateName(answer.state), ...('runId' in answer && answer.runId ? { runId: answer.runId } : {}) });
    },
  };
}

/** The console's JSON and event-stream API (services/console/openapi.yaml). */
export function apiRoutes(console: ConsoleServer): Route[] {
  return [...sessionRoutes(console), ...workflowRoutes(console), ...failureRoutes(console), ...operationRoutes(console)];
}

/** Sign-in with a token, the session's answer, sign-out. */
function sessionRoutes(console: ConsoleServer): Route[] {
  return [
    {
      method: 'POST',
      path: '/api/session',
      open: true,
      noCsrf: true,
      handle: async ({ request, response }) => {
        const body = await readJsonBody(request, console.maxBodyBytes);
        const owner = body['anonymous'] === true ? anonymousOwner(console.auth) : await console.tokens.owner(stringField(body, 'token'));
        const session = console.sessions.create(owner);
        console.logger.info({ identity: session.identity, via: 'token' }, 'console sign-in');
        sendNoContent(response, { 'set-cookie': console.sessionCookie(session) });
      },
    },
    {
      method: 'GET',
      path: '/api/sign-in',
      open: true,
      handle: ({ response }) => {
        // what the sign-in page offers besides a token
        sendJson(response, 200, { identityProvider: console.oidc !== undefined, anonymous: console.auth.allowAnonymous });
      },
    },
    {
      method: 'GET',
      path: '/api/session',
      handle: (context) => {
        const session = sessionOf(context);
        sendJson(context.response, 200, {
          identity: session.identity,
          roles: session.roles,
          permissions: session.permissions,
          csrfToken: session.csrfToken,
          identityProvider: console.oidc !== undefined,
        });
      },
    },
    {
      method: 'DELETE',
      path: '/api/session',
      handle: (context) => {
        console.sessions.delete(sessionOf(context).id);
        sendNoContent(context.response, { 'set-cookie': console.clearedSessionCookie() });
      },
    },
  ];
}

/** The workflows, one workflow, its actions and its counts. */
function workflowRoutes(console: ConsoleServer): Route[] {
  return [
    {
      method: 'GET',
      path: '/api/workflows',
      handle: async (context) => {
        const session = sessionOf(context);
        sendJson(context.response, 200, { workflows: await forSession(console, session, () => console.views.list(session.token)) });
      },
    },
    {
      method: 'GET',
      path: '/api/workflows/{name}',
      handle: async (context) => {
        const session = sessionOf(context);
        sendJson(context.response, 200, await forSession(console, session, () => console.views.detail(context.params['name'] as string, session.token)));
      },
    },
    workflowAction(console, 'start'),
    workflowAction(console, 'stop'),
    workflowAction(console, 'pause'),
    workflowAction(console, 'resume'),
    { method: 'GET', path: '/api/workflows/{name}/events', handle: (context) => workflowEvents(console, context) },
  ];
}

/** The failure store: list, one message, retry, discard. */
function failureRoutes(console: ConsoleServer): Route[] {
  return [
    {
      method: 'GET',
      path: '/api/failures',
      handle: async (context) => {
        const session = sessionOf(context);
        sendJson(context.response, 200, await forSession(console, session, () => listFailures(console.loom, context.query, session.token)));
      },
    },
    {
      method: 'GET',
      path: '/api/failures/{workflow}/{id}',
      handle: async (context) => {
        const session = sessionOf(context);
        const { workflow = '', id = '' } = context.params;
        const answer = await forSession(console, session, () => console.loom.unary('executor', 'getFailedMessage', { workflow, id }, session.token));
        if (answer.message === undefined) throw new ApiError(404, `no failed message '${id}' in workflow '${workflow}'`);
        sendJson(context.response, 200, failureView(answer.message));
      },
    },
    ...(['retry', 'discard'] as const).map((action): Route => ({
      method: 'POST',
      path: `/api/failures/${action}`,
      handle: async (context) => {
        const session = sessionOf(context);
        const body = await readJsonBody(context.request, console.maxBodyBytes);
        const filter = failureFilter({ workflow: stringField(body, 'workflow') });
        const ids = stringListField(body, 'ids', MAX_IDS);
        const request = { ids, filter, all: false };
        if (action === 'retry') {
          const answer = await forSession(console, session, () => console.loom.unary('executor', 'retryFailedMessages', request, session.token));
          sendJson(context.response, 200, { retried: Number(answer.retried) });
        } else {
          const answer = await forSession(console, session, () => console.loom.unary('executor', 'discardFailedMessages', request, session.token));
          sendJson(context.response, 200, { discarded: Number(answer.discarded) });
        }
      },
    })),
  ];
}

/** The audit log, skills and schedules. */
function operationRoutes(console: ConsoleServer): Route[] {
  return [
    {
      method: 'GET',
      path: '/api/audit',
      handle: async (context) => {
        const session = sessionOf(context);
        sendJson(context.response, 200, await forSession(console, session, () => queryAudit(console.loom, context.query, session.token)));
      },
    },
    { method: 'GET', path: '/api/audit/events', handle: (context) => auditEvents(console, context) },
    {
      method: 'POST',
      path: '/api/audit/verify',
      handle: async (context) => {
        const session = sessionOf(context);
        sendJson(context.response, 200, await forSession(console, session, () => verifyAudit(console.loom, session.token)));
      },
    },
    {
      method: 'GET',
      path: '/api/skills',
      handle: async (context) => {
        const session = sessionOf(context);
        sendJson(context.response, 200, await forSession(console, session, () => listSkills(console.loom, session.token)));
      },
    },
    {
      method: 'GET',
      path: '/api/schedules',
      handle: async (context) => {
        const session = sessionOf(context);
        sendJson(context.response, 200, await forSession(console, session, () => listSchedules(console.loom, session.token)));
      },
    },
  ];
}
