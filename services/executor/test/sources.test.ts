import { existsSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { type Socket } from 'node:net';
import { mkdtemp, readdir, readFile, rename, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@loom/config';
import { COMPONENT_KINDS } from '@loom/domain';
import { ManualClock, withResolvers } from '@loom/foundation';
import { BearerCredentials } from '@loom/service-kit';
import { afterEach, describe, expect, it } from 'vitest';
import { DirectoryNotFoundError, fileReaderFactory } from '../src/components/file-reader.js';
import { timerFactory } from '../src/components/timer.js';
import { componentFactories } from '../src/components/registry.js';
import { WEBHOOK_MAX_BODY_BYTES, WebhookListenError, webhookFactory, type WebhookSecurity, type WebhookSource } from '../src/components/webhook.js';
import { type LoomMessage, type Source } from '../src/runtime/component.js';
import { componentContext } from './component-context.js';

/** A source's context, its logger writing JSON lines into `lines`; what it reports through `fail` in `failures`. */
function contextFor(kind: string, options: Record<string, unknown>, name?: string, clock?: ManualClock) {
  return componentContext(kind, options, {
    ...(name === undefined ? {} : { name }),
    ...(clock === undefined ? {} : { clock }),
    workflowName: 'sources_test',
    onFail: 'record',
  });
}

/** Waits until the condition holds, polling; fails after `timeoutMs`. */
async function until(condition: () => boolean | Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await sleep(10);
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const running: Source[] = [];
const directories: string[] = [];
afterEach(async () => {
  for (const source of running.splice(0)) await source.stop();
  for (const directory of directories.splice(0)) await rm(directory, { recursive: true, force: true });
});

async function started<T extends Source>(source: T, emit: (message: LoomMessage) => Promise<void>): Promise<T> {
  await source.start(emit);
  running.push(source);
  return source;
}

describe('timer', () => {
  // the timer runs on a clock of the test's own, moved by hand: what happens in a span of time is exact, and a silence
  // is proved by moving the clock, not by waiting on the machine's
  const begun = new Date('2026-01-01T00:00:00.000Z');
  function timerOn(clock: ManualClock, options: Record<string, unknown>) {
    return contextFor(COMPONENT_KINDS.TIMER, options, undefined, clock);
  }
  const later = (ms: number) => new Date(begun.getTime() + ms);
  /** Lets the promises under way settle (an emit, the timer's next wait). */
  const settled = () => new Promise<void>((resolve) => setImmediate(resolve));

  it('emits numbered ticks at its period after the initial delay, and nothing once stopped', async () => {
    const clock = new ManualClock(begun);
    const { context } = timerOn(clock, { period: 100, initial_delay: 250 });
    const ticks: { message: LoomMessage; at: number }[] = [];
    const source = await timerFactory.create(context);
    if (!('start' in source)) throw new Error('the timer is not a source');
    await started(source, (message) => {
      ticks.push({ message, at: clock.now().getTime() - begun.getTime() });
      return Promise.resolve();
    });
    await clock.untilWaiting(1);
    await clock.advanceTo(later(249));
    expect(ticks).toHaveLength(0);
    await clock.advanceTo(later(250 + 3 * 100));
    expect(ticks.map(({ at }) => at)).toEqual([250, 350, 450, 550]);
    await source.stop();

    expect(ticks.map(({ message }) => message.body.tick)).toEqual([1, 2, 3, 4]);
    for (const { message } of ticks) {
      expect(message.body.time).toBe(later(((message.body.tick as number) - 1) * 100 + 250).toISOString());
      expect(message.id).toMatch(/^[0-9a-f-]{36}$/);
    }
    expect(new Set(ticks.map(({ message }) => message.id)).size).toBe(4);
    // a stopped timer stays silent, however long: it waits for nothing
    expect(clock.waiting).toBe(0);
    await clock.advanceTo(later(10_000));
    expect(ticks).toHaveLength(4);
  });

  it('waits for each emit before the next tick, and stop resolves only once the pending emit did', async () => {
    const clock = new ManualClock(begun);
    const { context } = timerOn(clock, { period: 20 });
    const source = await timerFactory.create(context);
    if (!('start' in source)) throw new Error('the timer is not a source');
    let inFlight = 0;
    let mostInFlight = 0;
    const held = withResolvers();
    const received: LoomMessage[] = [];
    await started(source, async (message) => {
      received.push(message);
      inFlight += 1;
      mostInFlight = Math.max(mostInFlight, inFlight);
      await held.promise;
      inFlight -= 1;
    });
    await settled();
    expect(received).toHaveLength(1);
    // ten periods pass while the first emit is held: no tick piles up behind it, none is even waited for
    await clock.advanceTo(later(200));
    expect(received).toHaveLength(1);
    expect(clock.waiting).toBe(0);

    let stopped = false;
    const stopping = source.stop().then(() => (stopped = true));
    await settled();
    expect(stopped).toBe(false);
    held.resolve();
    await stopping;
    expect(inFlight).toBe(0);
    expect(mostInFlight).toBe(1);
    expect(clock.waiting).toBe(0);
    await clock.advanceTo(later(1_000));
    expect(received).toHaveLength(1);
  });

  it("stops when its run stops: the run's signal ends its wait", async () => {
    const clock = new ManualClock(begun);
    const { context, controller } = timerOn(clock, { period: 1_000 });
    const source = await timerFactory.create(context);
    if (!('start' in source)) throw new Error('the timer is not a source');
    const received: LoomMessage[] = [];
    await started(source, (message) => {
      received.push(message);
      return Promise.resolve();
    });
    await clock.untilWaiting(1);
    expect(received).toHaveLength(1);
    controller.abort();
    await settled();
    expect(clock.waiting).toBe(0);
    await clock.advanceTo(later(5_000));
    expect(received).toHaveLength(1);
  });
});

describe('file reader', () => {
  async function directory(): Promise<string> {
    const created = await mkdtemp(join(tmpdir(), 'loom-file-reader-'));
    directories.push(created);
    return created;
  }

  async function writeAt(path: string, content: string, secondsAgo: number): Promise<void> {
    await writeFile(path, content);
    const at = new Date(Date.now() - secondsAgo * 1000);
    await utimes(path, at, at);
  }

  /** A file reader of these options (not started), its logger writing JSON lines into `lines`. */
  async function fileReader(options: Record<string, unknown>, name?: string) {
    const { context, lines } = contextFor(COMPONENT_KINDS.FILE_READER, options, name);
    const source = await fileReaderFactory.create(context);
    if (!('start' in source)) throw new Error('the file reader is not a source');
    return { source, lines };
  }

  /** A started file reader of these options; every message it emits lands in `received`, then `accept` answers for the workflow. */
  async function startedReader(options: Record<string, unknown>, accept: (message: LoomMessage) => Promise<void> = () => Promise.resolve()) {
    const { source, lines } = await fileReader(options);
    const received: LoomMessage[] = [];
    await started(source, (message) => {
      received.push(message);
      return accept(message);
    });
    return { received, lines };
  }

  it('emits the messages of each file oldest first, arrays one per element, and moves a file only after all were accepted', async () => {
    const inbox = await directory();
    const processed = join(inbox, 'done');
    await writeAt(join(inbox, 'b.json'), JSON.stringify([{ n: 2 }, { n: 3 }]), 10);
    await writeAt(join(inbox, 'a.json'), JSON.stringify({ n: 1 }), 20);
    await writeAt(join(inbox, 'notes.txt'), JSON.stringify({ n: 99 }), 30);
    const held = withResolvers();
    const { received } = await startedReader({ directory: inbox, processed_directory: processed }, async (message) => {
      // the last message of b.json is held: the workflow has not accepted it yet
      if (message.body.n === 3) await held.promise;
    });
    expect(existsSync(processed)).toBe(true);
    await until(() => received.length === 3);
    await until(() => existsSync(join(processed, 'a.json')));
    expect(existsSync(join(inbox, 'b.json'))).toBe(true);
    expect(existsSync(join(processed, 'b.json'))).toBe(false);

    held.resolve();
    await until(() => existsSync(join(processed, 'b.json')));
    expect(existsSync(join(inbox, 'b.json'))).toBe(false);
    expect(received.map((message) => message.body)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
    expect(new Set(received.map((message) => message.id)).size).toBe(3);
    expect(JSON.parse(await readFile(join(processed, 'b.json'), 'utf8'))).toEqual([{ n: 2 }, { n: 3 }]);
    // other suffixes are left alone
    expect(existsSync(join(inbox, 'notes.txt'))).toBe(true);

    // a file dropped later is picked up by the polling
    await writeFile(join(inbox, 'c.json'), JSON.stringify({ n: 4 }));
    await until(() => received.length === 4);
    expect(received[3]!.body).toEqual({ n: 4 });
    await until(() => existsSync(join(processed, 'c.json')));
  });

  it('renames a read file <file>.processed when no processed directory is set, and honours another suffix', async () => {
    const inbox = await directory();
    await writeFile(join(inbox, 'order.msg'), JSON.stringify({ order: 7 }));
    await writeFile(join(inbox, 'other.json'), JSON.stringify({ order: 8 }));
    const { received } = await startedReader({ directory: inbox, suffix: '.msg' });
    await until(() => existsSync(join(inbox, 'order.msg.processed')));
    expect(received.map((message) => message.body)).toEqual([{ order: 7 }]);
    expect((await readdir(inbox)).sort()).toEqual(['order.msg.processed', 'other.json']);
  });

  it('moves a file that holds no object or array of objects to failed/ with a warning naming it, emitting nothing of it', async () => {
    const inbox = await directory();
    await writeAt(join(inbox, 'number.json'), '42', 30);
    await writeAt(join(inbox, 'broken.json'), '{"n": ', 20);
    await writeAt(join(inbox, 'mixed.json'), JSON.stringify([{ n: 1 }, 'two']), 10);
    await writeAt(join(inbox, 'good.json'), JSON.stringify({ n: 5 }), 5);
    const { received, lines } = await startedReader({ directory: inbox });
    await until(() => existsSync(join(inbox, 'good.json.processed')));

    expect((await readdir(join(inbox, 'failed'))).sort()).toEqual(['broken.json', 'mixed.json', 'number.json']);
    expect(received.map((message) => message.body)).toEqual([{ n: 5 }]);
    const warnings = lines.filter((line) => line.level === 'warn');
    for (const file of ['number.json', 'broken.json', 'mixed.json']) {
      const warning = warnings.find((line) => line.msg.includes(file));
      expect(warning, file).toBeDefined();
      expect(warning!.file).toBe(join(inbox, file));
      expect(warning!.component).toBe('component_1');
    }
    expect(warnings.find((line) => line.msg.includes('number.json'))!.msg).toContain('not a JSON object');
    expect(warnings.find((line) => line.msg.includes('broken.json'))!.msg).toContain('not valid JSON');
    expect(warnings.find((line) => line.msg.includes('mixed.json'))!.msg).toContain('element 1');
  });

  it('leaves a file whose messages were not all accepted in place, and does not read it again in the same run', async () => {
    const inbox = await directory();
    await writeFile(join(inbox, 'a.json'), JSON.stringify([{ n: 1 }, { n: 2 }]));
    const { received, lines } = await startedReader({ directory: inbox }, (message) =>
      message.body.n === 2 ? Promise.reject(new Error('queue closed')) : Promise.resolve(),
    );
    await until(() => received.length === 2);
    // a file put in later is read by a later poll, which passed a.json over: neither moved nor read again
    await writeFile(join(inbox, 'b.part'), JSON.stringify({ n: 5 }));
    await rename(join(inbox, 'b.part'), join(inbox, 'b.json'));
    await until(() => received.length === 3);
    expect(received.map((message) => message.body.n)).toEqual([1, 2, 5]);
    expect(await readdir(inbox)).toContain('a.json');
    expect(lines.some((line) => line.level === 'warn' && line.file === join(inbox, 'a.json'))).toBe(true);
  });

  it('refuses to start on a missing directory, naming the option', async () => {
    const missing = join(await directory(), 'nowhere');
    const { source } = await fileReader({ directory: missing }, 'reader_9');
    const failure = source.start(() => Promise.resolve());
    await expect(failure).rejects.toBeInstanceOf(DirectoryNotFoundError);
    await expect(failure).rejects.toMatchObject({ kind: 'failed-precondition', option: 'reader_9.options.directory' });
    await expect(failure).rejects.toThrow(`reader_9.options.directory: '${missing}' is not an existing directory`);
  });

  it('refuses a file as the directory', async () => {
    const parent = await directory();
    await writeFile(join(parent, 'plain'), '');
    const { source } = await fileReader({ directory: join(parent, 'plain') }, 'reader_9');
    await expect(source.start(() => Promise.resolve())).rejects.toThrow('reader_9.options.directory');
  });
});

describe('webhook', () => {
  // these tests are about everything but authentication (test/webhook-auth.test.ts): their webhooks say none
  const OPEN: WebhookSecurity = { credentials: () => new BearerCredentials({ tokens: {} }), tls: undefined };

  async function webhook(options: Record<string, unknown> = {}, name = 'hook_1') {
    const { context, lines } = contextFor(COMPONENT_KINDS.WEBHOOK, { port: 0, path: '/hooks/in', authentication: 'none', ...options }, name);
    const received: LoomMessage[] = [];
    const source = await started(await webhookFactory('127.0.0.1', OPEN).create(context), (message) => {
      received.push(message);
      return Promise.resolve();
    });
    return { source, received, lines, url: `http://127.0.0.1:${source.port}/hooks/in` };
  }

  it('answers 202 with the message id only once emit accepted the message', async () => {
    const { context } = contextFor(COMPONENT_KINDS.WEBHOOK, { port: 0, path: '/hooks/in', authentication: 'none' });
    const received: LoomMessage[] = [];
    const held = withResolvers();
    const source = await started(await webhookFactory('127.0.0.1', OPEN).create(context), async (message) => {
      received.push(message);
      await held.promise;
    });
    expect(source.port).toBeGreaterThan(0);

    let answered = false;
    const response = fetch(`http://127.0.0.1:${source.port}/hooks/in?x=1`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'X-Loom-Trace': 'abc',
        'x-other': 'dropped',
        traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      },
      body: JSON.stringify({ order: 42, items: ['a'] }),
    }).then((answer) => {
      answered = true;
      return answer;
    });
    await until(() => received.length === 1);
    // a round trip through the same server after the emit began: an answer sent without waiting for the emit would
    // have been written before this one's
    expect((await fetch(`http://127.0.0.1:${source.port}/elsewhere`, { method: 'POST', body: '{}' })).status).toBe(404);
    expect(answered).toBe(false);

    held.resolve();
    const answer = await response;
    expect(answer.status).toBe(202);
    expect(await answer.json()).toEqual({ id: received[0]!.id });
    expect(received[0]!.body).toEqual({ order: 42, items: ['a'] });
    // the caller's trace context stays with the message
    expect(received[0]!.headers).toEqual({ 'x-loom-trace': 'abc', traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' });
  });

  it('answers 400 to a body that is not a JSON object, naming the problem', async () => {
    const { url, received } = await webhook();
    for (const [body, problem] of [
      ['[{"a": 1}, 2]', '[1]: each message of a batch must be a JSON object, not a number'],
      ['[]', 'the batch holds no message'],
      ['"text"', 'the body must be a JSON object or an array of them, not a string'],
      ['null', 'the body must be a JSON object or an array of them, not null'],
      ['{"broken": ', 'the body is not valid JSON'],
      ['', 'the body is not valid JSON'],
    ]) {
      const answer = await fetch(url, { method: 'POST', body });
      expect(answer.status, body).toBe(400);
      expect(answer.headers.get('content-type')).toBe('application/json');
      expect(await answer.json()).toEqual({ error: problem });
    }
    expect(received).toHaveLength(0);
  });

  it('takes a JSON array or NDJSON lines as one batch, in order, answering the ids; a bad line refuses all of it', async () => {
    const { url, received } = await webhook();
    const array = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-loom-source': 'feed' },
      body: JSON.stringify([{ n: 1 }, { n: 2 }, { n: 3 }]),
    });
    expect(array.status).toBe(202);
    const { ids } = (await array.json()) as { ids: string[] };
    expect(received.map((message) => message.body)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
    expect(received.map((message) => message.id)).toEqual(ids);
    expect(received.every((message) => message.headers['x-loom-source'] === 'feed')).toBe(true);

    const lines = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-ndjson' }, body: '{"n":4}\n\n{"n":5}\n' });
    expect(lines.status).toBe(202);
    expect(((await lines.json()) as { ids: string[] }).ids).toHaveLength(2);
    expect(received.map((message) => message.body)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }, { n: 5 }]);

    const badLine = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-ndjson' }, body: '{"n":6}\n[7]\n' });
    expect(badLine.status).toBe(400);
    expect(await badLine.json()).toEqual({ error: 'line 2: each line must be a JSON object, not an array' });
    const tooMany = await fetch(url, { method: 'POST', body: JSON.stringify(Array.from({ length: 1001 }, (_, n) => ({ n }))) });
    expect(tooMany.status).toBe(400);
    expect(received).toHaveLength(5);
  });

  it('answers a batch the workflow stopped taking halfway 503 with the ids of the messages it accepted', async () => {
    const { context } = contextFor(COMPONENT_KINDS.WEBHOOK, { port: 0, path: '/hooks/in', authentication: 'none' });
    const received: LoomMessage[] = [];
    const source = await started(await webhookFactory('127.0.0.1', OPEN).create(context), (message) => {
      if (received.length === 2) return Promise.reject(new Error('the queue closed'));
      received.push(message);
      return Promise.resolve();
    });
    const answer = await fetch(`http://127.0.0.1:${source.port}/hooks/in`, { method: 'POST', body: JSON.stringify([{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }]) });
    expect(answer.status).toBe(503);
    const body = (await answer.json()) as { error: string; ids: string[] };
    expect(body.ids).toEqual(received.map((message) => message.id));
    expect(body.error).toBe('the workflow accepted 2 of the 4 messages; the rest were not accepted');
  });

  it('answers 404 on another path, 405 with Allow: POST to another method, 413 to a body over 1 MiB', async () => {
    const { source, url, received } = await webhook();
    const elsewhere = await fetch(`http://127.0.0.1:${source.port}/other`, { method: 'POST', body: '{}' });
    expect(elsewhere.status).toBe(404);
    expect(await elsewhere.json()).toEqual({ error: 'no webhook at /other; POST to /hooks/in' });

    for (const method of ['GET', 'PUT', 'DELETE']) {
      const wrong = await fetch(url, { method, ...(method === 'PUT' ? { body: '{}' } : {}) });
      expect(wrong.status, method).toBe(405);
      expect(wrong.headers.get('allow')).toBe('POST');
      await wrong.body?.cancel();
    }

    const large = JSON.stringify({ text: 'x'.repeat(WEBHOOK_MAX_BODY_BYTES) });
    const tooLarge = await fetch(url, { method: 'POST', body: large });
    expect(tooLarge.status).toBe(413);
    expect(await tooLarge.json()).toEqual({ error: `the body is larger than ${WEBHOOK_MAX_BODY_BYTES} bytes` });

    // exactly at the limit is fine
    const fitting = JSON.stringify({ text: 'x'.repeat(WEBHOOK_MAX_BODY_BYTES - 11) });
    expect(Buffer.byteLength(fitting)).toBe(WEBHOOK_MAX_BODY_BYTES);
    expect((await fetch(url, { method: 'POST', body: fitting })).status).toBe(202);
    expect(received).toHaveLength(1);
  });

  it("listens where loom's server listens (server.host), unless its host option says otherwise", async () => {
    // through the executor's own factories, as a run builds them: 127.0.0.2 is loopback too, and no default anyone has
    const factories = componentFactories(loadConfig({ env: {}, overrides: ['server.host=127.0.0.2'] }));
    const factory = factories.get(COMPONENT_KINDS.WEBHOOK);
    if (factory === undefined) throw new Error('no webhook factory');
    const { context } = contextFor(COMPONENT_KINDS.WEBHOOK, { port: 0, path: '/in', authentication: 'none' }, 'hook_host');
    const onServerHost = await started((await factory.create(context)) as WebhookSource, () => Promise.resolve());
    expect(onServerHost.address).toBe('127.0.0.2');
    expect((await fetch(`http://127.0.0.2:${onServerHost.port}/in`, { method: 'POST', body: '{}' })).status).toBe(202);
    await expect(fetch(`http://127.0.0.1:${onServerHost.port}/in`, { method: 'POST', body: '{}' })).rejects.toThrow();

    const everywhere = contextFor(COMPONENT_KINDS.WEBHOOK, { port: 0, path: '/in', host: '0.0.0.0', authentication: 'none' }, 'hook_everywhere').context;
    const onOption = await started((await factory.create(everywhere)) as WebhookSource, () => Promise.resolve());
    expect(onOption.address).toBe('0.0.0.0');

    const blank = contextFor(COMPONENT_KINDS.WEBHOOK, { port: 0, path: '/in', host: ' ' }, 'hook_blank').context;
    await expect(factory.create(blank)).rejects.toThrow('hook_blank.options.host');
  });

  it('fails to start on a port already in use, naming the port and the option', async () => {
    const { source } = await webhook();
    const { context } = contextFor(COMPONENT_KINDS.WEBHOOK, { port: source.port, path: '/', authentication: 'none' }, 'hook_2');
    const second = await webhookFactory('127.0.0.1', OPEN).create(context);
    const failure = second.start(() => Promise.resolve());
    await expect(failure).rejects.toBeInstanceOf(WebhookListenError);
    await expect(failure).rejects.toThrow(`hook_2.options.port ${source.port} is in use (EADDRINUSE): set hook_2.options.port to a free port`);
    await expect(failure).rejects.toMatchObject({ kind: 'failed-precondition', port: source.port, code: 'EADDRINUSE', setting: 'hook_2.options.port' });
    // the first one still serves
    expect((await fetch(`http://127.0.0.1:${source.port}/hooks/in`, { method: 'POST', body: '{}' })).status).toBe(202);
  });

  it('fails to start on an address this machine does not have, naming its host option, or server.host without one', async () => {
    // 192.0.2.0/24 is TEST-NET-1: never an address of this machine
    const onOption = contextFor(COMPONENT_KINDS.WEBHOOK, { port: 0, path: '/', host: '192.0.2.1', authentication: 'none' }, 'hook_far').context;
    const failure = (await webhookFactory('127.0.0.1', OPEN).create(onOption)).start(() => Promise.resolve());
    await expect(failure).rejects.toThrow(
      /^hook_far\.options\.host: 192\.0\.2\.1 is not an address of this machine \(EADDRNOTAVAIL\): set hook_far\.options\.host to/,
    );

    const inherited = contextFor(COMPONENT_KINDS.WEBHOOK, { port: 0, path: '/', authentication: 'none' }, 'hook_inherited').context;
    const fromServer = (await webhookFactory('192.0.2.1', OPEN).create(inherited)).start(() => Promise.resolve());
    await expect(fromServer).rejects.toMatchObject({ setting: 'server.host', code: 'EADDRNOTAVAIL' });
  });

  it('stops promptly despite a kept-alive connection, and then refuses connections', async () => {
    const { source, url } = await webhook();
    // a client that keeps its connection alive for the next request
    const agent = new Agent({ keepAlive: true });
    const socket = await new Promise<Socket>((resolve, reject) => {
      const request = httpRequest(url, { method: 'POST', agent }, (response) => {
        expect(response.statusCode).toBe(202);
        response.resume();
        response.on('end', () => resolve(request.socket as Socket));
      });
      request.on('error', reject);
      request.end('{"a": 1}');
    });
    let closed = false;
    socket.on('close', () => (closed = true));
    await source.stop();
    // the source ended the idle connection itself instead of waiting out the server's 5 s keep-alive
    await expect.poll(() => closed, { timeout: 2_000 }).toBe(true);
    agent.destroy();
    await expect(fetch(url, { method: 'POST', body: '{}' })).rejects.toThrow();
  });
});
