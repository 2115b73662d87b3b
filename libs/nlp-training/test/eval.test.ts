import { describe, expect, it } from 'vitest';
import { evalNlp, testDataDir } from '@loom/nlp-training';

describe('npm run eval -- nlp', () => {
  it('scores the committed models on a dev sample no more than 1 point under their cards', () => {
    const lines: string[] = [];
    const exitCode = evalNlp({ sample: 150, dataDir: testDataDir(), print: (line) => lines.push(line) });
    console.log(lines.join('\n'));
    expect(lines.filter((l) => l.startsWith('FAIL'))).toEqual([]);
    expect(exitCode).toBe(0);
    expect(lines.join('\n')).toMatch(/gold tokens: UPOS \d+\.\d+/);
  });
});
