import { describe, expect, it } from 'vitest';
import { IllegalTransitionError, Lifecycle, type TransitionTable } from './lifecycle.js';

type Light = 'OFF' | 'ON' | 'BROKEN';
const TABLE: TransitionTable<Light> = { OFF: ['ON', 'BROKEN'], ON: ['OFF', 'BROKEN'], BROKEN: [] };

describe('Lifecycle', () => {
  it('moves along the table and reports where it is', () => {
    const light = new Lifecycle('light', TABLE, 'OFF');
    light.to('ON');
    expect(light.state).toBe('ON');
    expect(light.is('OFF', 'ON')).toBe(true);
    expect(light.can('OFF')).toBe(true);
    expect(light.final).toBe(false);
    light.to('BROKEN');
    expect(light.final).toBe(true);
  });

  it('refuses a move the table does not have with a typed error naming subject, from and to, and stays put', () => {
    const light = new Lifecycle('light', TABLE, 'BROKEN');
    expect(light.can('ON')).toBe(false);
    expect(() => light.to('ON')).toThrow(IllegalTransitionError);
    expect(() => light.to('ON')).toThrow('light: no transition from BROKEN to ON');
    expect(light.state).toBe('BROKEN');
  });

  it('refuses staying in a state unless the table lists it', () => {
    const light = new Lifecycle('light', TABLE, 'ON');
    expect(() => light.to('ON')).toThrow(IllegalTransitionError);
  });
});
