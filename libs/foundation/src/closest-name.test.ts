import { describe, expect, it } from 'vitest';
import { closestName, editDistance } from './closest-name.js';

describe('editDistance', () => {
  it('counts inserts, deletes, substitutions and swaps of neighbours, ignoring case', () => {
    expect(editDistance('sink.Loger', 'sink.Logger')).toBe(1);
    expect(editDistance('sink.Logegr', 'sink.Logger')).toBe(1);
    expect(editDistance('SINK.LOGGER', 'sink.Logger')).toBe(0);
    expect(editDistance('', 'abc')).toBe(3);
    expect(editDistance('kitten', 'sitting')).toBe(3);
  });
});

describe('closestName', () => {
  const kinds = ['source.Inlet', 'source.Timer', 'sink.Logger', 'sink.Outlet'];

  it('names the closest candidate within a third of the length', () => {
    expect(closestName('sink.Loger', kinds)).toBe('sink.Logger');
    expect(closestName('source.Inlte', kinds)).toBe('source.Inlet');
    expect(closestName('source.inlet', kinds)).toBe('source.Inlet');
  });

  it('suggests nothing when no candidate is close', () => {
    expect(closestName('graph.Writer', kinds)).toBeUndefined();
    expect(closestName('ab', ['xy'])).toBeUndefined();
    expect(closestName('x', [])).toBeUndefined();
  });
});
