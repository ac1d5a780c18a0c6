import { describe, expect, it } from 'vitest';
import { durationMs } from '../../../lib/testing/duration.ts';

describe('durationMs', () => {
  it('reads milliseconds and numbers with units, alone or together', () => {
    expect(durationMs(250)).toBe(250);
    expect(durationMs('500ms')).toBe(500);
    expect(durationMs('30s')).toBe(30_000);
    expect(durationMs('2h')).toBe(7_200_000);
    expect(durationMs('1h30m')).toBe(5_400_000);
    expect(durationMs('1.5d')).toBe(129_600_000);
  });

  it('refuses what is not a duration, naming it', () => {
    expect(() => durationMs('2 hours')).toThrow('duration "2 hours" is not a number with a unit (ms, s, m, h, d)');
    expect(() => durationMs('')).toThrow('duration "" is not a number with a unit');
    expect(() => durationMs('5')).toThrow('duration "5" is not a number with a unit');
    expect(() => durationMs(-1)).toThrow('duration must be a finite number of milliseconds ≥ 0, got -1');
    expect(() => durationMs(Number.NaN)).toThrow('got NaN');
  });
});
