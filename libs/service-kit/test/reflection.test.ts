import { credentials, loadPackageDefinition, type ClientDuplexStream, status } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { fromBinary } from '@bufbuild/protobuf';
import { FileDescriptorProtoSchema, type FileDescriptorProto } from '@bufbuild/protobuf/wkt';
import { SecretsService } from '@loom/contracts';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Authenticator, LoomServer, unimplemented } from '../src/index.js';
import { capturedLogger } from '../src/testing.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A server running loom.v1.Secrets only, anonymous calls refused (reflection stays open). */
async function serveSecrets(): Promise<string> {
  const { logger } = capturedLogger();
  const server = new LoomServer({
    logger,
    authenticator: new Authenticator({ tokens: {}, roles: {}, allowAnonymous: false, clientCertificates: false }),
  });
  server.addService('loom.v1.Secrets', SecretsService, unimplemented(SecretsService, {} as Record<keyof typeof SecretsService, string>));
  const port = await server.listen('127.0.0.1', 0);
  cleanups.push(() => server.shutdown(1000));
  return `127.0.0.1:${port}`;
}

interface Response {
  valid_host: string;
  message_response: string;
  file_descriptor_response?: { file_descriptor_proto: Buffer[] };
  list_services_response?: { service: { name: string }[] };
  all_extension_numbers_response?: { base_type_name: string; extension_number: number[] };
  error_response?: { error_code: number; error_message: string };
}
type Stream = ClientDuplexStream<Record<string, unknown>, Response>;

/** One reflection stream of `version` (v1 or v1alpha), as grpcurl keeps one open: `ask` writes a request and resolves with its answer. */
function reflectionStream(address: string, version: 'v1' | 'v1alpha'): { ask: (request: Record<string, unknown>) => Promise<Response> } {
  const root = join(dirname(createRequire(import.meta.url).resolve('@grpc/reflection')), '..', 'proto');
  const definition = loadSync(`grpc/reflection/${version}/reflection.proto`, { includeDirs: [root], keepCase: true, oneofs: true });
  const loaded = loadPackageDefinition(definition) as unknown as {
    grpc: {
      reflection: Record<
        string,
        { ServerReflection: new (address: string, creds: ReturnType<typeof credentials.createInsecure>) => { ServerReflectionInfo(): Stream; close(): void } }
      >;
    };
  };
  const client = new loaded.grpc.reflection[version]!.ServerReflection(address, credentials.createInsecure());
  const stream = client.ServerReflectionInfo();
  const waiting: ((response: Response) => void)[] = [];
  stream.on('data', (response: Response) => waiting.shift()?.(response));
  stream.on('error', () => undefined);
  cleanups.push(() => {
    stream.end();
    client.close();
  });
  return {
    ask: (request) =>
      new Promise((resolve) => {
        waiting.push(resolve);
        stream.write(request);
      }),
  };
}

function files(response: Response): FileDescriptorProto[] {
  return (response.file_descriptor_response?.file_descriptor_proto ?? []).map((bytes) => fromBinary(FileDescriptorProtoSchema, bytes));
}

describe('server reflection', () => {
  it('lists the services the server runs, health and reflection, to an anonymous caller', async () => {
    const { ask } = reflectionStream(await serveSecrets(), 'v1');
    const listed = await ask({ host: 'loom', list_services: '' });
    expect(listed.valid_host).toBe('loom');
    expect(listed.list_services_response?.service.map(({ name }) => name)).toEqual([
      'loom.v1.Secrets',
      'grpc.health.v1.Health',
      'grpc.reflection.v1.ServerReflection',
      'grpc.reflection.v1alpha.ServerReflection',
    ]);
  });

  it('answers a symbol with its file and every import as separate files, each once a stream, with the comments', async () => {
    const { ask } = reflectionStream(await serveSecrets(), 'v1');
    const first = files(await ask({ file_containing_symbol: 'loom.v1.Secrets' }));
    expect(first.map(({ name }) => name)).toEqual([
      'loom/v1/secrets.proto',
      'google/protobuf/timestamp.proto',
      'loom/v1/workflow.proto',
      'google/protobuf/struct.proto',
    ]);
    const secrets = first[0]!;
    expect(secrets.dependency).toEqual(['google/protobuf/timestamp.proto', 'loom/v1/workflow.proto']);
    expect(secrets.sourceCodeInfo?.location.some(({ leadingComments }) => leadingComments.includes('Ecosystem variables'))).toBe(true);
    expect(secrets.options?.goPackage).toBe('github.com/loom-dev/loom/clients/go/loomv1;loomv1');

    // the client holds them now: a symbol of workflow.proto brings that file alone, a file asked by name comes again
    expect(files(await ask({ file_containing_symbol: 'loom.v1.Workflow' })).map(({ name }) => name)).toEqual(['loom/v1/workflow.proto']);
    expect(files(await ask({ file_by_filename: 'google/protobuf/struct.proto' })).map(({ name }) => name)).toEqual(['google/protobuf/struct.proto']);
  });

  it('finds methods, fields, nested types and enum values by their full names, the health service and the error details', async () => {
    const { ask } = reflectionStream(await serveSecrets(), 'v1');
    const fileOf = async (symbol: string): Promise<string | undefined> => files(await ask({ file_containing_symbol: symbol }))[0]?.name;
    expect(await fileOf('loom.v1.Secrets.CreateVariable')).toBe('loom/v1/secrets.proto');
    expect(await fileOf('loom.v1.Workflow.components')).toBe('loom/v1/workflow.proto');
    expect(await fileOf('google.protobuf.Struct.FieldsEntry')).toBe('google/protobuf/struct.proto');
    expect(await fileOf('google.protobuf.NULL_VALUE')).toBe('google/protobuf/struct.proto');
    expect(await fileOf('grpc.health.v1.Health')).toBe('grpc/health/v1/health.proto');
    expect(await fileOf('grpc.reflection.v1.ServerReflection')).toBe('grpc/reflection/v1/reflection.proto');
    // the error details every status may carry, though no served file imports them
    expect(await fileOf('google.rpc.BadRequest.FieldViolation')).toBe('google/rpc/error_details.proto');
  });

  it('answers NOT_FOUND for an unknown symbol or file, and for a service this server does not run', async () => {
    const { ask } = reflectionStream(await serveSecrets(), 'v1');
    for (const request of [
      { file_containing_symbol: 'loom.v1.NoSuchThing' },
      { file_by_filename: 'loom/v1/nothing.proto' },
      { file_containing_symbol: 'loom.v1.Executor' },
      { file_containing_extension: { containing_type: 'loom.v1.Workflow', extension_number: 100 } },
      { all_extension_numbers_of_type: 'loom.v1.NoSuchThing' },
    ]) {
      const answer = await ask(request);
      expect({ request, error: answer.error_response?.error_code }).toEqual({ request, error: status.NOT_FOUND });
    }
    expect((await ask({ file_containing_symbol: 'loom.v1.NoSuchThing' })).error_response?.error_message).toBe('symbol "loom.v1.NoSuchThing" not found');
    // a known message without extensions (an empty list goes on the wire as nothing)
    const extensions = (await ask({ all_extension_numbers_of_type: 'loom.v1.Workflow' })).all_extension_numbers_response;
    expect(extensions).toEqual({ base_type_name: 'loom.v1.Workflow' });
  });

  it('answers v1alpha as v1', async () => {
    const { ask } = reflectionStream(await serveSecrets(), 'v1alpha');
    expect((await ask({ list_services: '' })).list_services_response?.service.map(({ name }) => name)).toContain('loom.v1.Secrets');
    expect(files(await ask({ file_containing_symbol: 'grpc.health.v1.HealthCheckRequest' })).map(({ name }) => name)).toEqual(['grpc/health/v1/health.proto']);
  });
});
