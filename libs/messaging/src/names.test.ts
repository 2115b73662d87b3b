import { describe, expect, it } from 'vitest';
import { sourceConsumerName, sourceSubject, jetStreamToken, streamName } from './names.js';

describe('JetStream names', () => {
  it('keep a safe name as it is', () => {
    expect(streamName('etl_3f1c9a0e-7b2d-4c1e-9a55-0c2f4e6b8d10')).toBe('LOOM_etl_3f1c9a0e-7b2d-4c1e-9a55-0c2f4e6b8d10');
    expect(sourceSubject('etl', 'web-in')).toBe('loom.workflow.etl.inlet.web-in');
    expect(sourceConsumerName('web-in')).toBe('inlet_web-in');
  });

  it('write other names with safe characters and a hash, so two never meet', () => {
    const token = jetStreamToken('Article pipeline.v2 > *');
    expect(token).toMatch(/^Article_pipeline_v2_____[0-9a-f]{12}$/);
    expect(jetStreamToken('Article pipeline.v2 > *')).toBe(token);
    expect(jetStreamToken('Article_pipeline_v2_____')).not.toBe(token);
    expect(jetStreamToken('a.b')).not.toBe(jetStreamToken('a b'));
    expect(sourceSubject('a.b', 'in')).toMatch(/^loom\.workflow\.a_b_[0-9a-f]{12}\.inlet\.in$/);
  });

  it('shorten a long name and keep it apart from its prefix', () => {
    const long = 'x'.repeat(300);
    expect(jetStreamToken(long)).toHaveLength(64 + 1 + 12);
    expect(jetStreamToken(long)).not.toBe(jetStreamToken('x'.repeat(299)));
  });
});
