import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { type ServiceDefinition, status } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import type { DescriptorProto, EnumDescriptorProto, FieldDescriptorProto, FileDescriptorProto } from '@bufbuild/protobuf/wkt';
import { type LoomErrorOptions, UnavailableError } from '@loom/foundation';
import { type ErrorSink } from './errors.js';
import { type BidiStreamHandler } from './handlers.js';

/** The health service every LoomServer runs, listed and described by reflection as the loom.v1 services are. */
export const HEALTH_SERVICE = 'grpc.health.v1.Health';
/** The reflection services, v1 and v1alpha (the version older clients ask). */
export const REFLECTION_SERVICES = ['grpc.reflection.v1.ServerReflection', 'grpc.reflection.v1alpha.ServerReflection'] as const;

/** One request of grpc.reflection (v1 and v1alpha share the shape), as proto-loader reads it. */
export interface ReflectionRequest {
  host?: string;
  messageRequest?: 'fileByFilename' | 'fileContainingSymbol' | 'fileContainingExtension' | 'allExtensionNumbersOfType' | 'listServices';
  fileByFilename?: string;
  fileContainingSymbol?: string;
  fileContainingExtension?: { containingType?: string; extensionNumber?: number };
  allExtensionNumbersOfType?: string;
  listServices?: string;
}

/** One response of grpc.reflection, in proto-loader's shape. */
export interface ReflectionResponse {
  validHost: string;
  originalRequest: ReflectionRequest;
  fileDescriptorResponse?: { fileDescriptorProto: Uint8Array[] };
  allExtensionNumbersResponse?: { baseTypeName: string; extensionNumber: number[] };
  listServicesResponse?: { service: { name: string }[] };
  errorResponse?: { errorCode: number; errorMessage: string };
}

/**
 * The files of the error details loom's statuses carry (a google.rpc.Status in `grpc-status-details-bin` holding
 * google.rpc.BadRequest): served with the services' files, so that a client resolves the details' Any types.
 */
export const ERROR_DETAIL_FILES = ['google/rpc/status.proto', 'google/rpc/error_details.proto'] as const;

/**
 * The files of a descriptor set that describe `services` (each service's file and everything it imports,
 * transitively) and ERROR_DETAIL_FILES, indexed by file name, by every symbol they declare and by extension, each
 * file kept serialized as the reflection protocol sends it.
 */
export class DescriptorIndex {
  private readonly files = new Map<string, { readonly proto: FileDescriptorProto; readonly bytes: Uint8Array }>();
  private readonly symbols = new Map<string, string>();
  /** Extendee -> field number -> the file declaring the extension. */
  private readonly extensions = new Map<string, Map<number, string>>();

  constructor(
    all: readonly FileDescriptorProto[],
    readonly services: readonly string[],
    serialize: (file: FileDescriptorProto) => Uint8Array,
  ) {
    const byName = new Map(all.map((file) => [file.name, file]));
    const declaring = new Map<string, FileDescriptorProto>();
    for (const file of all) for (const service of file.service) declaring.set(qualify(file.package, service.name), file);
    const pending = [...services.flatMap((service) => declaring.get(service) ?? []), ...ERROR_DETAIL_FILES.flatMap((name) => byName.get(name) ?? [])];
    for (let file = pending.pop(); file !== undefined; file = pending.pop()) {
      if (this.files.has(file.name)) continue;
      this.files.set(file.name, { proto: file, bytes: serialize(file) });
      for (const dependency of file.dependency) {
        const imported = byName.get(dependency);
        // buf's image holds every import; a set without one still answers for the files it has
        if (imported !== undefined) pending.push(imported);
      }
    }
    for (const { proto } of this.files.values()) this.indexFile(proto);
  }

  /** The file named `name`, then every file it imports transitively that `sent` does not hold yet; undefined when unknown. */
  fileByName(name: string, sent: Set<string>): Uint8Array[] | undefined {
    if (!this.files.has(name)) return undefined;
    const answer: Uint8Array[] = [];
    const seen = new Set<string>();
    const pending = [name];
    for (let next = pending.shift(); next !== undefined; next = pending.shift()) {
      const file = this.files.get(next);
      // the requested file goes always (the client asked again); an import already sent on this stream, with its own
      // imports, does not
      if (file === undefined || seen.has(next) || (next !== name && sent.has(next))) continue;
      seen.add(next);
      sent.add(next);
      answer.push(file.bytes);
      pending.push(...file.proto.dependency);
    }
    return answer;
  }

  /** The name of the file that declares the fully qualified `symbol` (a service, method, message, field, enum, value or extension). */
  fileOfSymbol(symbol: string): string | undefined {
    return this.symbols.get(symbol.startsWith('.') ? symbol.slice(1) : symbol);
  }

  /** The name of the file that declares extension `number` of the message `extendee`. */
  fileOfExtension(extendee: string, number: number): string | undefined {
    return this.extensions.get(extendee)?.get(number);
  }

  /** The extension numbers known for the message `type`; undefined when the message is unknown. */
  extensionNumbers(type: string): number[] | undefined {
    const file = this.fileOfSymbol(type);
    if (file === undefined) return undefined;
    return [...(this.extensions.get(type)?.keys() ?? [])].sort((a, b) => a - b);
  }

  private indexFile(file: FileDescriptorProto): void {
    const add = (name: string): void => {
      // the first file to declare a name keeps it, as a compiler would refuse the second
      if (!this.symbols.has(name)) this.symbols.set(name, file.name);
    };
    const addEnum = (scope: string, enumType: EnumDescriptorProto): void => {
      add(qualify(scope, enumType.name));
      // an enum's values are siblings of the enum, as in C++
      for (const value of enumType.value) add(qualify(scope, value.name));
    };
    const addExtensions = (scope: string, fields: readonly FieldDescriptorProto[]): void => {
      for (const field of fields) {
        add(qualify(scope, field.name));
        const extendee = field.extendee.startsWith('.') ? field.extendee.slice(1) : field.extendee;
        const numbers = this.extensions.get(extendee) ?? new Map<number, string>();
        this.extensions.set(extendee, numbers);
        numbers.set(field.number, file.name);
      }
    };
    const addMessage = (scope: string, message: DescriptorProto): void => {
      const name = qualify(scope, message.name);
      add(name);
      for (const field of message.field) add(qualify(name, field.name));
      for (const oneof of message.oneofDecl) add(qualify(name, oneof.name));
      for (const nested of message.nestedType) addMessage(name, nested);
      for (const enumType of message.enumType) addEnum(name, enumType);
      addExtensions(name, message.extension);
    };
    for (const message of file.messageType) addMessage(file.package, message);
    for (const enumType of file.enumType) addEnum(file.package, enumType);
    for (const service of file.service) {
      const name = qualify(file.package, service.name);
      add(name);
      for (const method of service.method) add(qualify(name, method.name));
    }
    addExtensions(file.package, file.extension);
  }
}

function qualify(scope: string, name: string): string {
  return scope === '' ? name : `${scope}.${name}`;
}

/**
 * Answers one reflection request from `index`; `sent` holds the files this stream has already received, which
 * later answers leave out (the client keeps them), as grpc-go's reflection does.
 */
export function answerReflection(index: DescriptorIndex, request: ReflectionRequest, sent: Set<string>): ReflectionResponse {
  const base = { validHost: request.host ?? '', originalRequest: request };
  const notFound = (what: string): ReflectionResponse => ({ ...base, errorResponse: { errorCode: status.NOT_FOUND, errorMessage: `${what} not found` } });
  const files = (name: string | undefined, what: string): ReflectionResponse => {
    const found = name === undefined ? undefined : index.fileByName(name, sent);
    return found === undefined ? notFound(what) : { ...base, fileDescriptorResponse: { fileDescriptorProto: found } };
  };
  switch (request.messageRequest) {
    case 'listServices':
      return { ...base, listServicesResponse: { service: index.services.map((name) => ({ name })) } };
    case 'fileByFilename':
      return files(request.fileByFilename, `file ${JSON.stringify(request.fileByFilename ?? '')}`);
    case 'fileContainingSymbol': {
      const symbol = request.fileContainingSymbol ?? '';
      return files(index.fileOfSymbol(symbol), `symbol ${JSON.stringify(symbol)}`);
    }
    case 'fileContainingExtension': {
      const { containingType = '', extensionNumber = 0 } = request.fileContainingExtension ?? {};
      return files(index.fileOfExtension(containingType, extensionNumber), `extension ${extensionNumber} of ${JSON.stringify(containingType)}`);
    }
    case 'allExtensionNumbersOfType': {
      const type = request.allExtensionNumbersOfType ?? '';
      const numbers = index.extensionNumbers(type);
      if (numbers === undefined) return notFound(`message type ${JSON.stringify(type)}`);
      return { ...base, allExtensionNumbersResponse: { baseTypeName: type, extensionNumber: numbers } };
    }
    default:
      return { ...base, errorResponse: { errorCode: status.INVALID_ARGUMENT, errorMessage: 'the request sets no message_request' } };
  }
}

// the options @grpc/reflection loads these files with (its PROTO_LOADER_OPTS): message objects in the shape above
const REFLECTION_LOADER_OPTIONS = { longs: String, enums: String, bytes: Array, defaults: true, oneofs: true };

/** The service definitions of grpc.reflection v1 and v1alpha, from the .proto files @grpc/reflection ships. */
export function reflectionDefinitions(): { readonly name: string; readonly definition: ServiceDefinition }[] {
  const protoRoot = join(dirname(createRequire(import.meta.url).resolve('@grpc/reflection')), '..', 'proto');
  return REFLECTION_SERVICES.map((name) => {
    const file = `${name.split('.').slice(0, -1).join('/')}/reflection.proto`;
    const loaded = loadSync(file, { ...REFLECTION_LOADER_OPTIONS, includeDirs: [protoRoot] });
    const definition = loaded[name];
    if (definition === undefined || !('ServerReflectionInfo' in definition)) throw new TypeError(`${file} defines no ${name}`);
    return { name, definition };
  });
}

/**
 * The ServerReflectionInfo handler over the descriptor set at `descriptorSetPath`, for `services`: the set is read
 * and indexed when the first reflection call comes (importing @bufbuild/protobuf, decoding and re-encoding the files:
 * 0.2 to 0.3 s on a busy two-core machine, which a server never asked does not pay) and kept; a failed build is not
 * kept, the next call tries again.
 */
export function reflectionHandler(
  descriptorSetPath: string,
  services: readonly string[],
  logger: ErrorSink,
): BidiStreamHandler<ReflectionRequest, ReflectionResponse> {
  let index: Promise<DescriptorIndex> | undefined;
  const build = async (): Promise<DescriptorIndex> => {
    const [{ fromBinary, toBinary }, { FileDescriptorSetSchema, FileDescriptorProtoSchema }] = await Promise.all([
      import('@bufbuild/protobuf'),
      import('@bufbuild/protobuf/wkt'),
    ]);
    const files = fromBinary(FileDescriptorSetSchema, readFileSync(descriptorSetPath)).file;
    return new DescriptorIndex(files, services, (file) => toBinary(FileDescriptorProtoSchema, file));
  };
  return async (requests, send, context) => {
    index ??= build().catch((error: unknown) => {
      index = undefined;
      logger.error({ err: error, descriptorSetPath }, 'server reflection cannot read the descriptor set');
      throw new ReflectionUnavailableError({ cause: error });
    });
    const built = await index;
    const sent = new Set<string>();
    const iterator = requests[Symbol.asyncIterator]();
    // a client may keep the stream open between questions: shutdown ends it rather than waiting for the client
    const stopped = new Promise<IteratorResult<ReflectionRequest>>((resolve) => {
      if (context.signal.aborted) resolve({ done: true, value: undefined });
      context.signal.addEventListener('abort', () => resolve({ done: true, value: undefined }), { once: true });
    });
    for (;;) {
      const next = await Promise.race([iterator.next(), stopped]);
      if (next.done === true) return;
      await send(answerReflection(built, next.value, sent));
    }
  };
}

/** The descriptor set could not be read or indexed: reflection answers UNAVAILABLE until a later call succeeds. */
export class ReflectionUnavailableError extends UnavailableError {
  constructor(options: LoomErrorOptions) {
    super('server reflection is unavailable: the descriptor set could not be read (the server log says why)', options);
  }
}
