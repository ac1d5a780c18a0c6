import { describe, expect, it } from 'vitest';
import { LeaseLostError } from '../../../lib/core/errors.ts';
import { FailpointCrash } from '../../../lib/runtime/failpoints.ts';
import { isInterruption, LegAborted } from '../../../lib/runtime/leg/leg-signals.ts';

describe('isInterruption', () => {
  it('is true for an abort, a lost lease and a simulated crash, never for a bare reason', () => {
    expect(isInterruption(new LegAborted('budget'))).toBe(true);
    expect(isInterruption(new LeaseLostError('gone'))).toBe(true);
    expect(isInterruption(new FailpointCrash('mid-step'))).toBe(true);
    expect(isInterruption('cancel')).toBe(false);
    expect(isInterruption(new Error('cancel'))).toBe(false);
  });
});
