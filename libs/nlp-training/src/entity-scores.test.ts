import { describe, expect, it } from 'vitest';
import { entityCardFigures, entityScores, formatEntityScores } from './entity-scores.js';

describe('entityScores', () => {
  it('counts exact spans per type: precision over predicted spans, recall over gold spans, micro over all', () => {
    const scores = entityScores([
      // PER found exactly; ORG found with a wrong end (a false positive and a miss); LOC missed
      { gold: ['B-PER', 'I-PER', 'O', 'B-ORG', 'I-ORG', 'O', 'B-LOC'], predicted: ['B-PER', 'I-PER', 'O', 'B-ORG', 'O', 'O', 'O'] },
      // a LOC found, a PER predicted where there is none
      { gold: ['B-LOC', 'O'], predicted: ['B-LOC', 'B-PER'] },
    ]);
    expect(Object.keys(scores)).toEqual(['LOC', 'ORG', 'PER', 'micro']);
    expect(scores['LOC']).toEqual({ precision: 100, recall: 50, f1: (100 * 2) / 3 });
    expect(scores['ORG']).toEqual({ precision: 0, recall: 0, f1: 0 });
    expect(scores['PER']).toEqual({ precision: 50, recall: 100, f1: (100 * 2) / 3 });
    expect(scores.micro).toEqual({ precision: 50, recall: 50, f1: 50 });
  });

  it('names the card figures per type and keeps the micro F1 as `micro`', () => {
    const figures = entityCardFigures(entityScores([{ gold: ['B-PER'], predicted: ['B-PER'] }]));
    expect(figures).toEqual({ precisionPer: 100, recallPer: 100, f1Per: 100, precisionMicro: 100, recallMicro: 100, f1Micro: 100, micro: 100 });
    expect(formatEntityScores(entityScores([{ gold: ['B-PER'], predicted: ['O'] }]))).toBe('PER P 0.00 R 0.00 F1 0.00  micro P 0.00 R 0.00 F1 0.00');
  });
});
