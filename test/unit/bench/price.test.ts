import { describe, expect, it } from 'vitest';
import {
  AWS_PRICES,
  PEER_PRICES,
  priceIdleDay,
  priceWorkload,
  usd,
  type WorkloadCounts,
} from '../../../bench/price.ts';
import { zeroTotals } from '../../../bench/request-meter.ts';

/** A workload of 100 steps in one run: one write unit per step and nothing else. */
const hundredSteps: WorkloadCounts = {
  steps: 100,
  legs: 1,
  starts: 1,
  dynamodb: { ...zeroTotals(), writes: 100, wcu: 100 },
  sqsRequests: 0,
  invocations: 0,
};

describe('the bench price table', () => {
  it("prices Baton's counted requests and the peers' units for the same steps", () => {
    // Act
    const price = priceWorkload(hundredSteps);

    // Assert: 100 write units, and 100 requests of 5 ms at 1 GB.
    const gbSeconds = (100 * 5) / 1000;
    expect(price.baton.usd).toBeCloseTo(100 * AWS_PRICES.dynamodbWriteUnit + gbSeconds * AWS_PRICES.lambdaGbSecondArm);
    expect(price.temporalCloud.usd).toBeCloseTo(101 * PEER_PRICES.temporalCloud.action);
    expect(price.vercelWorkflow.usd).toBeCloseTo(100 * PEER_PRICES.vercelWorkflow.step);
    expect(price.inngest.usd).toBeUndefined();
    expect(price.belowCheapest.peer).toBe('lambdaDurable');
    expect(price.belowCheapest.times).toBeCloseTo(price.lambdaDurable.usd! / price.baton.usd!);
  });

  it('scales a workload to a given number of steps', () => {
    const once = priceWorkload(hundredSteps);
    const tenfold = priceWorkload(hundredSteps, 1_000);

    expect(tenfold.baton.usd).toBeCloseTo(10 * once.baton.usd!);
    expect(tenfold.belowCheapest.times).toBeCloseTo(once.belowCheapest.times);
  });

  it('prices an idle day as storage alone', () => {
    const day = priceIdleDay(30e9);

    expect(day.baton).toBeCloseTo(AWS_PRICES.dynamodbStorageGbMonth);
  });

  it('prints dollars with two significant digits and no exponent', () => {
    expect([usd(0.000018234), usd(0.0082), usd(0.27), usd(12.5), usd(undefined)]).toEqual([
      '$0.000018',
      '$0.0082',
      '$0.27',
      '$12.50',
      'n/a',
    ]);
  });
});
