import * as grpc from '@grpc/grpc-js';

const serialize = (value: unknown): Buffer => Buffer.from(JSON.stringify(value));
const deserialize = (bytes: Buffer): unknown => JSON.parse(bytes.toString('utf8'));

/** A hand-written unary method definition with JSON (de)serialisers. */
function unaryMethod(service: string, method: string): grpc.MethodDefinition<unknown, unknown> {
  return {
    path: `/${service}/${method}`,
    requestStream: false,
    responseStream: false,
    requestSerialize: serialize,
    requestDeserialize: deserialize,
    responseSerialize: serialize,
    responseDeserialize: deserialize,
    originalName: method,
  };
}

/** `loom.v1.Secrets` with only DecryptResources: the downstream service B. */
export const secretsService: grpc.ServiceDefinition = {
  DecryptResources: unaryMethod('loom.v1.Secrets', 'DecryptResources'),
};

/** `loom.v1.Executor` with only StartWorkflow: service A, which calls B. */
export const executorService: grpc.ServiceDefinition = {
  StartWorkflow: unaryMethod('loom.v1.Executor', 'StartWorkflow'),
};

/** A generic client class for a service definition, the way generated code builds one. */
export function clientFor(service: grpc.ServiceDefinition, name: string): grpc.ServiceClientConstructor {
  return grpc.makeGenericClientConstructor(service, name);
}

/** Makes a unary call and resolves with the response, or rejects with the gRPC error. */
export function unary(client: grpc.Client, service: grpc.ServiceDefinition, method: string, request: unknown): Promise<unknown> {
  const definition = service[method];
  if (definition === undefined) throw new Error(`no method ${method}`);
  return new Promise((resolve, reject) => {
    client.makeUnaryRequest(definition.path, serialize, deserialize, request, (error, response) => {
      if (error) reject(error);
      else resolve(response);
    });
  });
}

/** Starts a server on 127.0.0.1 with any free port and returns it with its address. */
export async function startServer(
  service: grpc.ServiceDefinition,
  implementation: grpc.UntypedServiceImplementation,
  interceptors: grpc.ServerInterceptor[],
): Promise<{ server: grpc.Server; address: string }> {
  const server = new grpc.Server({ interceptors });
  server.addService(service, implementation);
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound)));
  });
  return { server, address: `127.0.0.1:${port}` };
}

/** Stops a server, cancelling calls still running. */
export function stopServer(server: grpc.Server): Promise<void> {
  return new Promise((resolve) => {
    server.tryShutdown(() => resolve());
    // tryShutdown waits for open calls; the tests have none left, but never hang on one
    setTimeout(() => server.forceShutdown(), 1_000).unref();
  });
}

/** A writable that keeps every chunk; a TCP port that was free a moment ago (for exporters that cannot bind port 0). */
export { captureStream, closedPort as freePort } from '@loom/testing';
