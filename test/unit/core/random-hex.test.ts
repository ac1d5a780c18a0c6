import { describe, expect, it } from 'vitest';
import { randomHex } from '../../../lib/core/random-hex.ts';

describe('pooled random hex', () => {
  it('gives hex of the length asked, never the same twice across many refills of its pool', () => {
    const ids = Array.from({ length: 5_000 }, () => randomHex(8));
    expect(ids.every((id) => /^[0-9a-f]{16}$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    expect(randomHex(16)).toMatch(/^[0-9a-f]{32}$/);
  });

  it('refuses more bytes than its pool holds', () => {
    expect(() => randomHex(8_192)).toThrow(/at most 4096 bytes/);
  });
});
