import { afterEach, describe, expect, it } from 'vitest';
import { OTLP_SPAN_KIND, type OtlpReceiver, startOtlpReceiver } from '../src/index.js';

let receiver: OtlpReceiver | undefined;
afterEach(async () => {
  await receiver?.close();
  receiver = undefined;
});

const post = (path: string, type: string, body: string) => fetch(`${receiver!.url}${path}`, { method: 'POST', headers: { 'content-type': type }, body });

describe('startOtlpReceiver', () => {
  it('decodes an OTLP/JSON export request into spans with their resource, parent, kind, attributes and links', async () => {
    receiver = await startOtlpReceiver();
    const request = {
      resourceSpans: [
        {
          resource: { attributes: [{ key: 'service.name', value: { stringValue: 'loom' } }] },
          scopeSpans: [
            {
              spans: [
                {
                  traceId: '0af7651916cd43dd8448eb211c80319c',
                  spanId: 'b7ad6b7169203331',
                  parentSpanId: '00f067aa0ba902b7',
                  name: 'process Clean up',
                  kind: 5,
                  attributes: [
                    { key: 'loom.message.id', value: { stringValue: 'm-1' } },
                    { key: 'loom.message.count', value: { intValue: '2' } },
                    { key: 'loom.message.ids', value: { arrayValue: { values: [{ stringValue: 'a' }, { stringValue: 'b' }] } } },
                    { key: 'sampled', value: { boolValue: true } },
                  ],
                  links: [{ traceId: '11111111111111111111111111111111', spanId: '2222222222222222' }],
                },
                { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: '00f067aa0ba902b7', parentSpanId: '', name: 'root', kind: 2 },
              ],
            },
          ],
        },
      ],
    };
    const answer = await post('/v1/traces', 'application/json', JSON.stringify(request));
    expect(answer.status).toBe(200);
    expect(receiver.spans()).toEqual([
      {
        service: 'loom',
        traceId: '0af7651916cd43dd8448eb211c80319c',
        spanId: 'b7ad6b7169203331',
        parentSpanId: '00f067aa0ba902b7',
        name: 'process Clean up',
        kind: OTLP_SPAN_KIND.CONSUMER,
        attributes: { 'loom.message.id': 'm-1', 'loom.message.count': 2, 'loom.message.ids': ['a', 'b'], sampled: true },
        links: [{ traceId: '11111111111111111111111111111111', spanId: '2222222222222222' }],
      },
      {
        service: 'loom',
        traceId: '0af7651916cd43dd8448eb211c80319c',
        spanId: '00f067aa0ba902b7',
        name: 'root',
        kind: OTLP_SPAN_KIND.SERVER,
        attributes: {},
        links: [],
      },
    ]);
    expect(receiver.refused).toEqual([]);
  });

  it('keeps the names of the metrics it gets, with their service', async () => {
    receiver = await startOtlpReceiver();
    const request = {
      resourceMetrics: [
        {
          resource: { attributes: [{ key: 'service.name', value: { stringValue: 'loom' } }] },
          scopeMetrics: [
            {
              metrics: [
                { name: 'rpc.server.duration', histogram: {} },
                { name: 'loom.test.events', sum: {} },
              ],
            },
          ],
        },
      ],
    };
    expect((await post('/v1/metrics', 'application/json', JSON.stringify(request))).status).toBe(200);
    expect(receiver.metrics()).toEqual([
      { service: 'loom', name: 'rpc.server.duration' },
      { service: 'loom', name: 'loom.test.events' },
    ]);
  });

  it('refuses what it cannot read (protobuf, broken JSON) and says so', async () => {
    receiver = await startOtlpReceiver();
    expect((await post('/v1/traces', 'application/x-protobuf', 'binary')).status).toBe(415);
    expect((await post('/v1/traces', 'application/json', '{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"no ids"}]}]}]}')).status).toBe(400);
    expect(receiver.refused).toEqual([
      '/v1/traces: content-type application/x-protobuf',
      expect.stringContaining('/v1/traces: a span without hex trace and span ids'),
    ]);
    expect(receiver.spans()).toEqual([]);
  });
});
