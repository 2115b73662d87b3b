import { describe, expect, it } from 'vitest';
import { decodeModelFile, decodeWeights, encodeModelFile, encodeWeights } from './model-file.js';
import { ModelLoadError } from './errors.js';

describe('weights sections', () => {
  const weights = new Float32Array(1 << 12);
  weights[0] = 1.5;
  weights[7] = -0.25;
  weights[300] = 0.75;
  weights[4095] = -1.5;

  it('decode to the encoded values (16-bit quantised) wherever the section starts in the file', () => {
    // header lengths of both parities put the section on an even and on an odd address
    for (const header of [{ kind: 'x' }, { kind: 'xy' }]) {
      const file = decodeModelFile('test', encodeModelFile(header, new Map([['w', encodeWeights(weights)]])));
      const decoded = decodeWeights('test', file.sections.get('w')!);
      expect(decoded.length).toBe(weights.length);
      for (let index = 0; index < weights.length; index++) expect(decoded[index]).toBeCloseTo(weights[index]!, 4);
    }
  });

  it('a truncated section is a ModelLoadError', () => {
    const bytes = encodeWeights(weights);
    expect(() => decodeWeights('test', bytes.subarray(0, bytes.length - 2))).toThrow(ModelLoadError);
    expect(() => decodeWeights('test', bytes.subarray(0, 14))).toThrow(/truncated/);
  });
});
