import { AssertionError } from 'node:assert';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { type AddressInfo } from 'node:net';

/** OTLP span kinds (opentelemetry/proto/trace/v1/trace.proto `Span.SpanKind`). */
export const OTLP_SPAN_KIND = { INTERNAL: 1, SERVER: 2, CLIENT: 3, PRODUCER: 4, CONSUMER: 5 } as const;

/** A span as an OTLP receiver got it, its attribute values decoded. */
export interface ReceivedSpan {
  /** The `service.name` of the resource that sent it. */
  readonly service: string;
  /** Lower-case hex, as OTLP/JSON writes ids. */
  readonly traceId: string;
  readonly spanId: string;
  /** Absent for a root span. */
  readonly parentSpanId?: string;
  readonly name: string;
  /** One of OTLP_SPAN_KIND. */
  readonly kind: number;
  readonly attributes: Readonly<Record<string, unknown>>;
  /** The span ids its links point at. */
  readonly links: readonly { readonly traceId: string; readonly spanId: string }[];
}

/** A real OTLP/HTTP receiver on loopback (`POST /v1/traces`, OTLP/JSON), as a collector would be. */
export interface OtlpReceiver {
  /** The base URL an exporter is given (`loom.telemetry.otlp.endpoint`); it posts to `<url>/v1/traces`. */
  readonly url: string;
  /** Every span received so far, in the order received. */
  spans(): ReceivedSpan[];
  /** The name of every metric received so far (`/v1/metrics`), with its resource's `service.name`. */
  metrics(): { readonly service: string; readonly name: string }[];
  /** What it refused (a body that is not OTLP/JSON): empty unless an exporter sent something it cannot read. */
  readonly refused: readonly string[];
  close(): Promise<void>;
}

interface AnyValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: number | string;
  doubleValue?: number;
  arrayValue?: { values?: AnyValue[] };
  kvlistValue?: { values?: KeyValue[] };
}
interface KeyValue {
  key: string;
  value?: AnyValue;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind?: number;
  attributes?: KeyValue[];
  links?: { traceId: string; spanId: string }[];
}
interface ExportTraceServiceRequest {
  resourceSpans?: { resource?: { attributes?: KeyValue[] }; scopeSpans?: { spans?: OtlpSpan[] }[] }[];
}
interface ExportMetricsServiceRequest {
  resourceMetrics?: { resource?: { attributes?: KeyValue[] }; scopeMetrics?: { metrics?: { name: string }[] }[] }[];
}

/**
 * Starts an OTLP/HTTP receiver on 127.0.0.1 and a free port. It decodes OTLP/JSON export requests (the encoding of
 * OpenTelemetry JS's OTLP/HTTP exporters) into spans and metric names, and refuses (415, kept in `refused`) any other
 * encoding, so a test never passes on data it could not read.
 */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const received: ReceivedSpan[] = [];
  const metrics: { service: string; name: string }[] = [];
  const refused: string[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => answer(request, response, Buffer.concat(chunks)));
  });
  const answer = (request: IncomingMessage, response: ServerResponse, body: Buffer): void => {
    const path = request.url ?? '';
    const type = request.headers['content-type'] ?? '';
    if (request.method !== 'POST' || (path !== '/v1/traces' && path !== '/v1/metrics')) {
      response.writeHead(404).end();
      return;
    }
    if (!type.startsWith('application/json')) {
      refused.push(`${path}: content-type ${type || 'none'}`);
      response.writeHead(415).end();
      return;
    }
    try {
      const request = JSON.parse(body.toString('utf8')) as unknown;
      if (path === '/v1/traces') received.push(...spansOf(request as ExportTraceServiceRequest));
      else metrics.push(...metricsOf(request as ExportMetricsServiceRequest));
    } catch (error) {
      refused.push(`${path}: ${error instanceof Error ? error.message : String(error)}`);
      response.writeHead(400).end();
      return;
    }
    response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  };
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans: () => [...received],
    metrics: () => [...metrics],
    refused,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function spansOf(request: ExportTraceServiceRequest): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const resourceSpans of request.resourceSpans ?? []) {
    const service = attributesOf(resourceSpans.resource?.attributes)['service.name'];
    for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
      for (const span of scopeSpans.spans ?? []) {
        if (typeof span.traceId !== 'string' || typeof span.spanId !== 'string') {
          throw new AssertionError({ message: `a span without hex trace and span ids: ${JSON.stringify(span).slice(0, 200)}` });
        }
        spans.push({
          service: typeof service === 'string' ? service : '',
          traceId: span.traceId,
          spanId: span.spanId,
          ...(span.parentSpanId === undefined || span.parentSpanId === '' ? {} : { parentSpanId: span.parentSpanId }),
          name: span.name,
          kind: span.kind ?? 0,
          attributes: attributesOf(span.attributes),
          links: (span.links ?? []).map((link) => ({ traceId: link.traceId, spanId: link.spanId })),
        });
      }
    }
  }
  return spans;
}

function metricsOf(request: ExportMetricsServiceRequest): { service: string; name: string }[] {
  return (request.resourceMetrics ?? []).flatMap((resourceMetrics) => {
    const service = attributesOf(resourceMetrics.resource?.attributes)['service.name'];
    return (resourceMetrics.scopeMetrics ?? []).flatMap((scope) =>
      (scope.metrics ?? []).map((metric) => ({ service: typeof service === 'string' ? service : '', name: metric.name })),
    );
  });
}

function attributesOf(attributes: readonly KeyValue[] | undefined): Record<string, unknown> {
  const decoded: Record<string, unknown> = {};
  for (const { key, value } of attributes ?? []) decoded[key] = valueOf(value);
  return decoded;
}

function valueOf(value: AnyValue | undefined): unknown {
  if (value === undefined) return undefined;
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.arrayValue !== undefined) return (value.arrayValue.values ?? []).map(valueOf);
  if (value.kvlistValue !== undefined) return attributesOf(value.kvlistValue.values);
  return undefined;
}
