import { DataPointType, MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { describe, expect, it } from 'vitest';
import { ATTR_WORKFLOW, createMessagingMetrics } from './metrics.js';

/** A reader collected on demand. */
class TestReader extends MetricReader {
  protected override onShutdown(): Promise<void> {
    return Promise.resolve();
  }
  protected override onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
}

/** Each metric's points as { workflow: value }. */
async function collect(reader: TestReader): Promise<Record<string, Record<string, number>>> {
  const { resourceMetrics } = await reader.collect();
  const result: Record<string, Record<string, number>> = {};
  for (const metric of resourceMetrics.scopeMetrics.flatMap((scope) => scope.metrics)) {
    expect([DataPointType.SUM, DataPointType.GAUGE]).toContain(metric.dataPointType);
    result[metric.descriptor.name] = Object.fromEntries(metric.dataPoints.map((point) => [String(point.attributes[ATTR_WORKFLOW]), point.value as number]));
  }
  return result;
}

describe('createMessagingMetrics', () => {
  it('counts stored, redelivered and terminated messages and reads pending at collection, by workflow', async () => {
    const reader = new TestReader();
    const provider = new MeterProvider({ readers: [reader] });
    let backlog = new Map([['etl', 3]]);
    const metrics = createMessagingMetrics(provider.getMeter('test'), () => Promise.resolve(backlog));
    metrics.stored('etl', 2);
    metrics.stored('etl', 1);
    metrics.stored('import', 5);
    metrics.redelivered('etl');
    metrics.terminated('import');
    expect(await collect(reader)).toEqual({
      'loom.messaging.stored': { etl: 3, import: 5 },
      'loom.messaging.redelivered': { etl: 1 },
      'loom.messaging.terminated': { import: 1 },
      'loom.messaging.pending': { etl: 3 },
    });
    backlog = new Map([
      ['etl', 0],
      ['import', 4],
    ]);
    expect((await collect(reader))['loom.messaging.pending']).toEqual({ etl: 0, import: 4 });
    await provider.shutdown();
  });
});
