import { EventEmitter } from 'node:events';
import {
  type ChannelInterface,
  type ChannelOptions,
  type ChannelCredentials,
  Channel,
  connectivityState,
  type Deadline,
  type experimental,
  type handleUnaryCall,
  type InterceptingListener,
  Metadata,
  type ServerInterceptingCallInterface,
  type ServerInterceptor,
  status,
  type StatusObject,
} from '@grpc/grpc-js';
import { MAX_MESSAGE_BYTES } from './client.js';

/** A unary method as a LoomServer serves it: the generated (de)serialisers and the adapted grpc-js handler. */
export interface LocalMethod {
  readonly path: string;
  readonly requestDeserialize: (value: Buffer) => unknown;
  readonly responseSerialize: (value: never) => Buffer;
  readonly handler: handleUnaryCall<unknown, unknown>;
}

/** The server side of one in-process call, as the server's interceptors see it (what an HTTP/2 stream is to grpc-js). */
type ServerListener = Parameters<ServerInterceptingCallInterface['start']>[0];
type PartialStatus = Parameters<ServerInterceptingCallInterface['sendStatus']>[0];
type ConnectionInfo = ReturnType<ServerInterceptingCallInterface['getConnectionInfo']>;
type MetricsRecorder = ReturnType<ServerInterceptingCallInterface['getMetricsRecorder']>;
type ChannelRef = ReturnType<ChannelInterface['getChannelzRef']>;

/**
 * The unary RPCs of a LoomServer for clients of its own process: a call goes through the same server interceptors
 * (tracing, metrics, authentication and the permission table) and handler as one that came over the server's port,
 * with its request and response encoded and decoded as on the wire, but without a socket, HTTP/2 or a second event
 * loop turn per frame. The server closes it when its shutdown begins (new calls fail UNAVAILABLE, as over a closed
 * port) and waits for the calls under way as it waits for gRPC's.
 */
export class LocalEndpoint {
  private readonly methods = new Map<string, LocalMethod>();
  private readonly underWay = new Set<LocalCall>();
  private readonly idle: (() => void)[] = [];
  private open = true;
  private served = 0;

  constructor(private readonly interceptors: readonly ServerInterceptor[]) {}

  /** How many calls reached a handler in memory so far. */
  get callsServed(): number {
    return this.served;
  }

  /** Serves a unary method to this process's clients. */
  add(method: LocalMethod): void {
    this.methods.set(method.path, method);
  }

  /** Whether a call to `path` is served here (a unary method of a service the server registered). */
  serves(path: string): boolean {
    return this.methods.has(path);
  }

  /** Refuses new calls from now on. */
  close(): void {
    this.open = false;
  }

  /** Resolves once no call is under way. */
  drained(): Promise<void> {
    if (this.underWay.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  /** Cancels every call still under way (the server's shutdown deadline passed). */
  cancelAll(): void {
    for (const call of [...this.underWay]) call.cancelWithStatus(status.UNAVAILABLE, 'the server shut down');
  }

  /** @internal A client call to `path`, run when the client half-closes. */
  createCall(path: string, deadline: Deadline): LocalCall {
    return new LocalCall(this, path, deadline);
  }

  /** @internal */
  begin(call: LocalCall): { method: LocalMethod; interceptors: readonly ServerInterceptor[] } | undefined {
    const method = this.methods.get(call.path);
    if (!this.open || method === undefined) return undefined;
    this.underWay.add(call);
    this.served += 1;
    return { method, interceptors: this.interceptors };
  }

  /** @internal */
  end(call: LocalCall): void {
    if (!this.underWay.delete(call) || this.underWay.size > 0) return;
    for (const resolve of this.idle.splice(0)) resolve();
  }
}

/**
 * A grpc-js channel for a client of this process: unary calls to methods the endpoint serves run in memory
 * (LocalEndpoint), anything else (streams, a service the process does not host) goes over a real channel to
 * `target`, made at its first use. The client's interceptors (deadline, bearer token, tracing) run as on any channel;
 * the retry policy of the service config does not apply to in-memory calls, whose UNAVAILABLE can only mean that the
 * server is shutting down.
 */
export class LocalChannel implements ChannelInterface {
  private remote: ChannelInterface | undefined;

  constructor(
    private readonly endpoint: LocalEndpoint,
    private readonly target: string,
    private readonly makeRemote: () => ChannelInterface,
  ) {}

  /** A channel factory for a grpc-js client (`channelFactoryOverride`): in memory where it can, else over gRPC. */
  static factory(endpoint: LocalEndpoint): (target: string, credentials: ChannelCredentials, options: ChannelOptions) => ChannelInterface {
    return (target, credentials, options) => new LocalChannel(endpoint, target, () => new Channel(target, credentials, options));
  }

  close(): void {
    this.remote?.close();
  }

  getTarget(): string {
    return this.target;
  }

  getConnectivityState(tryToConnect: boolean): connectivityState {
    return this.remote?.getConnectivityState(tryToConnect) ?? connectivityState.READY;
  }

  watchConnectivityState(currentState: connectivityState, deadline: Date | number, callback: (error?: Error) => void): void {
    this.remoteChannel().watchConnectivityState(currentState, deadline, callback);
  }

  getChannelzRef(): ChannelRef {
    return this.remoteChannel().getChannelzRef();
  }

  createCall(
    method: string,
    deadline: Deadline,
    host: string | null | undefined,
    parentCall: null,
    propagateFlags: number | null | undefined,
  ): experimental.CallStream {
    if (this.endpoint.serves(method)) return this.endpoint.createCall(method, deadline);
    return this.remoteChannel().createCall(method, deadline, host, parentCall, propagateFlags);
  }

  private remoteChannel(): ChannelInterface {
    this.remote ??= this.makeRemote();
    return this.remote;
  }
}

const NO_DEADLINE = Infinity;

/** One in-memory unary call: the client's end (grpc-js CallStream) and, once the request is whole, the server's. */
class LocalCall implements experimental.CallStream {
  private static nextNumber = 0;
  private readonly number = LocalCall.nextNumber++;
  private listener: InterceptingListener | undefined;
  private metadata: Metadata | undefined;
  private request: Buffer | undefined;
  private server: LocalServerCall | undefined;
  private timer: NodeJS.Timeout | undefined;
  private done = false;

  constructor(
    private readonly endpoint: LocalEndpoint,
    readonly path: string,
    private readonly deadline: Deadline,
  ) {}

  start(metadata: Metadata, listener: InterceptingListener): void {
    this.listener = listener;
    // the server's interceptors change what they are given (the identity they verified), as grpc-js's do with the
    // metadata it decoded: never the client's own object
    this.metadata = metadata.clone();
    const ms = deadlineMs(this.deadline);
    if (ms !== NO_DEADLINE) {
      this.timer = setTimeout(() => this.cancelWithStatus(status.DEADLINE_EXCEEDED, 'Deadline exceeded'), Math.max(0, ms - Date.now()));
    }
  }

  sendMessageWithContext(context: { readonly callback?: (error?: Error | null) => void }, message: Buffer): void {
    if (message.byteLength > MAX_MESSAGE_BYTES) {
      this.cancelWithStatus(status.RESOURCE_EXHAUSTED, `Sent message larger than max (${message.byteLength} vs. ${MAX_MESSAGE_BYTES})`);
    } else {
      this.request = message;
    }
    context.callback?.();
  }

  startRead(): void {
    // the answer is delivered whole once the handler answered
  }

  halfClose(): void {
    if (this.done) return;
    // the server takes the call on a later turn, as from a socket: a refusal the interceptors answer at once must not
    // reach the caller's callback before the caller has its call object (service-kit's call() listens for an abort then)
    process.nextTick(() => this.dispatch());
  }

  private dispatch(): void {
    if (this.done) return; // cancelled, or past its deadline, before the server took it
    const served = this.endpoint.begin(this);
    if (served === undefined) {
      // as over a port that no longer takes calls
      this.finish({ code: status.UNAVAILABLE, details: 'the server is shutting down', metadata: new Metadata() });
      return;
    }
    this.server = new LocalServerCall(this, served.method, this.metadata ?? new Metadata(), this.request, this.deadline);
    runUnary(served.interceptors, served.method, this.server);
  }

  cancelWithStatus(code: status, details: string): void {
    if (this.done) return;
    this.finish({ code, details, metadata: new Metadata() });
    this.server?.cancel();
  }

  getPeer(): string {
    return 'in-process';
  }

  getCallNumber(): number {
    return this.number;
  }

  setCredentials(): void {
    // per-call credentials travel in the metadata the interceptors wrote
  }

  getAuthContext(): null {
    return null;
  }

  /** @internal The server's answer: its metadata, its message when it sent one, and the status. */
  answer(headers: Metadata | undefined, message: Buffer | undefined, final: StatusObject): void {
    if (this.done) return;
    const listener = this.listener;
    if (listener !== undefined && final.code === status.OK) {
      listener.onReceiveMetadata(headers ?? new Metadata());
      if (message !== undefined) listener.onReceiveMessage(message);
    }
    this.finish(final);
  }

  private finish(final: StatusObject): void {
    if (this.done) return;
    this.done = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.endpoint.end(this);
    this.listener?.onReceiveStatus(final);
  }
}

/** What a deadline is in milliseconds since the epoch (Infinity for none). */
function deadlineMs(deadline: Deadline): number {
  return deadline instanceof Date ? deadline.getTime() : deadline;
}

/**
 * The innermost server call of an in-memory call (grpc-js's BaseServerInterceptingCall over an HTTP/2 stream): it
 * hands the metadata, the decoded request and the half-close to the interceptors' listener as they read, and the
 * encoded answer and status to the client's end.
 */
class LocalServerCall implements ServerInterceptingCallInterface {
  private listener: ServerListener | undefined;
  private headers: Metadata | undefined;
  private message: Buffer | undefined;
  private read = 0;
  private ended = false;
  private readonly recorder: MetricsRecorder = { recordRequestCost: () => undefined } as unknown as MetricsRecorder;

  constructor(
    private readonly client: LocalCall,
    private readonly method: LocalMethod,
    private readonly metadata: Metadata,
    private readonly request: Buffer | undefined,
    private readonly deadline: Deadline,
  ) {}

  start(listener: ServerListener): void {
    this.listener = listener;
    listener.onReceiveMetadata(this.metadata);
  }

  sendMetadata(metadata: Metadata): void {
    this.headers ??= metadata.clone();
  }

  sendMessage(message: unknown, callback: () => void): void {
    if (this.ended) return;
    let encoded: Buffer;
    try {
      encoded = this.method.responseSerialize(message as never);
    } catch (error) {
      this.sendStatus({ code: status.INTERNAL, details: `Error serializing response: ${error instanceof Error ? error.message : String(error)}` });
      return;
    }
    if (encoded.byteLength > MAX_MESSAGE_BYTES) {
      this.sendStatus({ code: status.RESOURCE_EXHAUSTED, details: `Sent message larger than max (${encoded.byteLength} vs. ${MAX_MESSAGE_BYTES})` });
      return;
    }
    this.message = encoded;
    callback();
  }

  sendStatus(sent: PartialStatus): void {
    if (this.ended) return;
    this.ended = true;
    const metadata = sent.metadata === null || sent.metadata === undefined ? new Metadata() : sent.metadata.clone();
    this.client.answer(this.headers, this.message, { code: sent.code, details: sent.details, metadata });
  }

  startRead(): void {
    const listener = this.listener;
    if (listener === undefined || this.ended) return;
    if (this.read++ > 0) {
      listener.onReceiveHalfClose();
      return;
    }
    if (this.request === undefined) {
      listener.onReceiveHalfClose();
      return;
    }
    let decoded: unknown;
    try {
      decoded = this.method.requestDeserialize(this.request);
    } catch (error) {
      this.sendStatus({ code: status.INTERNAL, details: `Error deserializing request: ${error instanceof Error ? error.message : String(error)}` });
      return;
    }
    listener.onReceiveMessage(decoded);
  }

  /** The client cancelled, or the deadline passed: the interceptors and the handler are told, as grpc-js tells them. */
  cancel(): void {
    if (this.ended) return;
    this.ended = true;
    const listener = this.listener;
    process.nextTick(() => listener?.onCancel());
  }

  getPeer(): string {
    return 'in-process';
  }

  getDeadline(): Deadline {
    return this.deadline;
  }

  getHost(): string {
    return 'in-process';
  }

  getAuthContext(): ReturnType<ServerInterceptingCallInterface['getAuthContext']> {
    return {};
  }

  getConnectionInfo(): ConnectionInfo {
    return {};
  }

  getMetricsRecorder(): MetricsRecorder {
    return this.recorder;
  }
}

/** grpc-js's unary handling (server.ts handleUnary) over an in-memory call: the same interceptors, in the same order. */
function runUnary(interceptors: readonly ServerInterceptor[], method: LocalMethod, base: LocalServerCall): void {
  const definition = {
    path: method.path,
    requestStream: false,
    responseStream: false,
    requestDeserialize: method.requestDeserialize,
    responseSerialize: method.responseSerialize,
  };
  const call = interceptors.reduce<ServerInterceptingCallInterface>((inner, interceptor) => interceptor(definition as never, inner), base);
  let metadata: Metadata | undefined;
  let request: unknown;
  let received = false;
  let unary: LocalUnaryCall | undefined;
  call.start({
    onReceiveMetadata(value) {
      metadata = value;
      call.startRead();
    },
    onReceiveMessage(value) {
      request = value;
      received = true;
      call.startRead();
    },
    onReceiveHalfClose() {
      if (!received) {
        call.sendStatus({ code: status.UNIMPLEMENTED, details: `Received no request message for unary method ${method.path}`, metadata: null });
        return;
      }
      unary = new LocalUnaryCall(method.path, call, metadata ?? new Metadata(), request);
      const respond = (error: Partial<StatusObject> | null, value?: unknown, trailer?: Metadata): void => {
        if (error !== null) {
          call.sendStatus({ code: error.code ?? status.UNKNOWN, details: error.details ?? 'Unknown error', metadata: error.metadata ?? trailer ?? null });
          return;
        }
        call.sendMessage(value, () => call.sendStatus({ code: status.OK, details: 'OK', metadata: trailer ?? null }));
      };
      try {
        method.handler(unary, respond);
      } catch {
        call.sendStatus({ code: status.UNKNOWN, details: 'Unknown error', metadata: null });
      }
    },
    onCancel() {
      if (unary === undefined) return;
      unary.cancelled = true;
      unary.emit('cancelled', 'cancelled');
    },
  });
}

/** What a unary handler is given (grpc-js's ServerUnaryCallImpl). */
class LocalUnaryCall extends EventEmitter {
  cancelled = false;

  constructor(
    private readonly path: string,
    private readonly call: ServerInterceptingCallInterface,
    readonly metadata: Metadata,
    readonly request: unknown,
  ) {
    super();
  }

  getPeer(): string {
    return this.call.getPeer();
  }

  sendMetadata(metadata: Metadata): void {
    this.call.sendMetadata(metadata);
  }

  getDeadline(): Deadline {
    return this.call.getDeadline();
  }

  getPath(): string {
    return this.path;
  }

  getHost(): string {
    return this.call.getHost();
  }

  getAuthContext(): ReturnType<ServerInterceptingCallInterface['getAuthContext']> {
    return this.call.getAuthContext();
  }

  getMetricsRecorder(): MetricsRecorder {
    return this.call.getMetricsRecorder();
  }
}
