import { context, type Meter, metrics, propagation, trace, type Tracer } from '@opentelemetry/api';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import { type IMetricReader, MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { AlwaysOffSampler, BatchSpanProcessor, ParentBasedSampler, type SpanProcessor, TraceIdRatioBasedSampler } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import { PrometheusStartError, TelemetryAlreadyRegisteredError, TelemetryConfigError } from './errors.js';
import { RedactingSpanProcessor } from './redacting-span-processor.js';
import { TELEMETRY_SCOPE } from './rpc-conventions.js';
import { redactor as defaultRedactor, type SecretRedactor } from './secret-redactor.js';

/** How `startTelemetry` sets up tracing and metrics. */
export interface TelemetryOptions {
  /** The resource's `service.name`. */
  serviceName: string;
  /** OTLP/HTTP base URL; when set, traces go to `<url>/v1/traces` and metrics to `<url>/v1/metrics`. */
  otlpEndpoint?: string;
  /** Port of the Prometheus scrape endpoint (`/metrics`); 0 or absent: no endpoint. */
  prometheusPort?: number;
  /** Host the Prometheus endpoint listens on; default 127.0.0.1. */
  prometheusHost?: string;
  /** Share of new traces sampled, 0 to 1; a span with a parent follows its parent. Default 1. */
  samplingRatio?: number;
  /** Extra span processors, after redaction; e.g. a SimpleSpanProcessor over an InMemorySpanExporter in tests. */
  spanProcessors?: SpanProcessor[];
  /** Scrubs every span before export; default the process-wide `redactor`. */
  redactor?: SecretRedactor;
  /** Set the global tracer and meter providers, W3C trace-context and baggage propagation and the AsyncLocalStorage context manager. Default true. */
  register?: boolean;
}

/** Tracing and metrics of one process, started by `startTelemetry`. */
export interface Telemetry {
  readonly tracerProvider: NodeTracerProvider;
  readonly meterProvider: MeterProvider;
  /** A tracer for spans of the service's own work. */
  readonly tracer: Tracer;
  /** A meter for the service's own instruments. */
  readonly meter: Meter;
  /** The scrape URL when the Prometheus endpoint is on. */
  readonly prometheusUrl?: string;
  /** Resolves once the Prometheus endpoint listens (at once when it is off); rejects with PrometheusStartError when it cannot. */
  readonly ready: Promise<void>;
  /** Flushes and stops every exporter, then releases the globals it registered. Safe to call twice. */
  shutdown(): Promise<void>;
}

const DEFAULT_PROMETHEUS_HOST = '127.0.0.1';

let globalsHeld = false;

/**
 * Starts tracing and metrics: a NodeTracerProvider sampling parent-based by ratio (recording nothing when no exporter
 * or extra processor would receive spans), a redaction processor ahead of every exporter, OTLP/HTTP export when an
 * endpoint is given, and a Prometheus
 * endpoint when a port is given. Throws TelemetryConfigError for a bad option and
 * TelemetryAlreadyRegisteredError when registering while another instance holds the globals.
 */
export function startTelemetry(options: TelemetryOptions): Telemetry {
  const settings = validate(options);
  const register = options.register ?? true;
  if (register && globalsHeld) throw new TelemetryAlreadyRegisteredError();

  const resource = defaultResource().merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: settings.serviceName }));

  const spanProcessors: SpanProcessor[] = [new RedactingSpanProcessor(options.redactor ?? defaultRedactor), ...(options.spanProcessors ?? [])];
  if (settings.otlpEndpoint !== undefined) {
    spanProcessors.push(new BatchSpanProcessor(new OTLPTraceExporter({ url: `${settings.otlpEndpoint}/v1/traces` })));
  }
  // With nowhere for spans to go (no exporter, no extra processor) none is recorded: trace and span ids are still made,
  // logged and propagated (unsampled), but no span object, attributes or redaction is paid for on every call.
  const recording = spanProcessors.length > 1;
  const tracerProvider = new NodeTracerProvider({
    resource,
    sampler: recording ? new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(settings.samplingRatio) }) : new AlwaysOffSampler(),
    spanProcessors,
  });

  const readers: IMetricReader[] = [];
  let prometheusUrl: string | undefined;
  let ready: Promise<void> = Promise.resolve();
  if (settings.prometheusPort > 0) {
    const host = settings.prometheusHost;
    const prometheus = new PrometheusExporter({ host, port: settings.prometheusPort });
    readers.push(prometheus);
    const url = `http://${host.includes(':') ? `[${host}]` : host}:${settings.prometheusPort}/metrics`;
    prometheusUrl = url;
    // the exporter starts listening in its constructor; startServer() returns that same attempt
    ready = prometheus.startServer().catch((error: unknown) => {
      throw new PrometheusStartError(url, host, { cause: error });
    });
    // the failure stays observable through `ready`, but must not crash a process that never awaits it
    ready.catch(() => undefined);
  }
  if (settings.otlpEndpoint !== undefined) {
    readers.push(new PeriodicExportingMetricReader({ exporter: new OTLPMetricExporter({ url: `${settings.otlpEndpoint}/v1/metrics` }) }));
  }
  const meterProvider = new MeterProvider({ resource, readers });

  if (register) {
    tracerProvider.register();
    metrics.setGlobalMeterProvider(meterProvider);
    globalsHeld = true;
  }

  let stopping: Promise<void> | undefined;
  return {
    tracerProvider,
    meterProvider,
    tracer: tracerProvider.getTracer(TELEMETRY_SCOPE),
    meter: meterProvider.getMeter(TELEMETRY_SCOPE),
    ...(prometheusUrl === undefined ? {} : { prometheusUrl }),
    ready,
    shutdown() {
      stopping ??= stop();
      return stopping;
    },
  };

  async function stop(): Promise<void> {
    const results = await Promise.allSettled([tracerProvider.shutdown(), meterProvider.shutdown()]);
    if (register) {
      trace.disable();
      metrics.disable();
      propagation.disable();
      context.disable();
      globalsHeld = false;
    }
    for (const result of results) {
      if (result.status === 'rejected') throw result.reason;
    }
  }
}

interface Settings {
  serviceName: string;
  otlpEndpoint: string | undefined;
  prometheusPort: number;
  prometheusHost: string;
  samplingRatio: number;
}

function validate(options: TelemetryOptions): Settings {
  if (options.serviceName.trim() === '') throw new TelemetryConfigError('serviceName', 'must not be empty');
  const samplingRatio = options.samplingRatio ?? 1;
  if (!Number.isFinite(samplingRatio) || samplingRatio < 0 || samplingRatio > 1) {
    throw new TelemetryConfigError('samplingRatio', `must be a number from 0 to 1, got ${samplingRatio}`);
  }
  const prometheusPort = options.prometheusPort ?? 0;
  if (!Number.isInteger(prometheusPort) || prometheusPort < 0 || prometheusPort > 65535) {
    // 0 cannot mean "any free port": the Prometheus exporter treats 0 as unset and takes 9464
    throw new TelemetryConfigError('prometheusPort', `must be an integer from 0 (off) to 65535, got ${prometheusPort}`);
  }
  const prometheusHost = options.prometheusHost ?? DEFAULT_PROMETHEUS_HOST;
  if (prometheusHost === '') throw new TelemetryConfigError('prometheusHost', 'must not be empty');
  let otlpEndpoint: string | undefined;
  if (options.otlpEndpoint !== undefined) {
    let url: URL;
    try {
      url = new URL(options.otlpEndpoint);
    } catch {
      throw new TelemetryConfigError('otlpEndpoint', `is not a URL: ${options.otlpEndpoint}`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new TelemetryConfigError('otlpEndpoint', `must be an http or https URL, got ${options.otlpEndpoint}`);
    }
    otlpEndpoint = options.otlpEndpoint.replace(/\/+$/, '');
  }
  return { serviceName: options.serviceName, otlpEndpoint, prometheusPort, prometheusHost, samplingRatio };
}
