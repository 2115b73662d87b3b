/** A telemetry option has a value that cannot work; `key` names the option. */
export class TelemetryConfigError extends Error {
  override readonly name = 'TelemetryConfigError';

  constructor(
    readonly key: string,
    message: string,
  ) {
    super(`${key}: ${message}`);
  }
}

/** `startTelemetry` was asked to register globals while an earlier instance still holds them. */
export class TelemetryAlreadyRegisteredError extends Error {
  override readonly name = 'TelemetryAlreadyRegisteredError';

  constructor() {
    super('telemetry globals are already registered; call shutdown() on the running instance first');
  }
}

/** The Prometheus scrape endpoint could not listen on its host and port. */
export class PrometheusStartError extends Error {
  override readonly name = 'PrometheusStartError';

  constructor(
    readonly url: string,
    /** The host it was to listen on. */
    readonly host: string,
    options: { cause: unknown },
  ) {
    super(`Prometheus endpoint ${url} could not start`, options);
  }
}
