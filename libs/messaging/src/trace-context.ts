import { context as contextApi, type Context, propagation, type TextMapGetter, type TextMapSetter } from '@opentelemetry/api';
import { headers as natsHeaders, type MsgHdrs } from 'nats';

const headerSetter: TextMapSetter<MsgHdrs> = {
  set(carrier, key, value) {
    carrier.set(key, value);
  },
};

const headerGetter: TextMapGetter<MsgHdrs> = {
  keys(carrier) {
    return carrier.keys();
  },
  get(carrier, key) {
    // MsgHdrs answers '' for a header it does not have
    const value = carrier.get(key);
    return value === '' ? undefined : value;
  },
};

const recordSetter: TextMapSetter<Record<string, string>> = {
  set(carrier, key, value) {
    carrier[key] = value;
  },
};

const recordGetter: TextMapGetter<Readonly<Record<string, string>>> = {
  keys(carrier) {
    return Object.keys(carrier);
  },
  get(carrier, key) {
    return carrier[key];
  },
};

/** Writes the trace context of `context` (W3C `traceparent`, `tracestate`, baggage) into NATS message headers. */
export function injectTraceContext(headers: MsgHdrs, context: Context = contextApi.active()): void {
  propagation.inject(context, headers, headerSetter);
}

/** The context carried by NATS message headers (the publisher's span as the parent), on top of `base`. */
export function extractTraceContext(headers: MsgHdrs | undefined, base: Context = contextApi.active()): Context {
  return headers === undefined ? base : propagation.extract(base, headers, headerGetter);
}

/** NATS headers with the given entries and the active trace context. */
export function messageHeaders(entries: Readonly<Record<string, string>> = {}, context: Context = contextApi.active()): MsgHdrs {
  const headers = natsHeaders();
  for (const [name, value] of Object.entries(entries)) headers.set(name, value);
  injectTraceContext(headers, context);
  return headers;
}

/** A message's headers as a plain record with the trace context of `context` added (a batch envelope's message, envelope.ts). */
export function recordHeaders(entries: Readonly<Record<string, string>> = {}, context: Context = contextApi.active()): Record<string, string> {
  const headers = { ...entries };
  propagation.inject(context, headers, recordSetter);
  return headers;
}

/** The context carried by a plain record of headers (an envelope's message), on top of `base`. */
export function extractRecordTraceContext(headers: Readonly<Record<string, string>>, base: Context = contextApi.active()): Context {
  return propagation.extract(base, headers, recordGetter);
}

/** NATS headers holding exactly these entries. */
export function natsHeadersOf(entries: Readonly<Record<string, string>>): MsgHdrs {
  const headers = natsHeaders();
  for (const [name, value] of Object.entries(entries)) headers.set(name, value);
  return headers;
}
