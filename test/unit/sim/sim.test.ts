import { describe, expect, it } from 'vitest';
import { runSeed } from '../../sim/run.ts';

/**
 * The deterministic simulator (test/sim, `npm run sim`) as a CI gate: a fixed budget of seeds
 * must hold every invariant, and a seed must replay to the very same trace. Set BATON_SIM=skip to
 * leave the budget out (it fails until the protocol fixes of issue 22 are in).
 */

/** Seeds 1…SEEDS: about 25 s on a 2-core machine. */
const SEEDS = 300;

describe('deterministic simulator', () => {
  it('replays a seed to the same trace, the same facts and the same verdict', async () => {
    // Arrange: a seed with faults of every kind and several sessions.
    const seed = 93;

    // Act
    const first = await runSeed(seed);
    const second = await runSeed(seed);

    // Assert
    expect(first.stats.events).toBeGreaterThan(50);
    expect(second.traceHash).toBe(first.traceHash);
    expect(second.traceTail).toEqual(first.traceTail);
    expect(second.violations).toEqual(first.violations);
    expect(second.stats).toEqual(first.stats);
  });

  it.skipIf(process.env.BATON_SIM === 'skip')(
    `holds every invariant for seeds 1…${SEEDS}`,
    async () => {
      // Act
      const failures: string[] = [];
      for (let seed = 1; seed <= SEEDS; seed++) {
        const result = await runSeed(seed);
        if (!result.ok)
          failures.push(
            `seed ${seed} (npm run sim -- --seed ${seed} --verbose): ${result.violations
              .slice(0, 2)
              .map((v) => `${v.invariant}: ${v.detail}`)
              .join(' | ')}`,
          );
      }

      // Assert
      expect(failures).toEqual([]);
    },
    120_000,
  );

  // Seeds the simulator still fails on: each is a known, open protocol problem (see the closing
  // note of issue 22). `it.fails` keeps them named and run; a fix makes the test fail, and then
  // it moves into the budget above as a passing seed.
  for (const [seed, why] of [
    [1024, 'a ticket resubmitted after its whole session expired runs again under the same result ids'],
    // Was seed 2229 until the step boundary stopped reading the record at every step: the seeds'
    // schedules moved, and 1271 now meets the same bug (after a resubmission over an expired record).
    [1271, 'a release asked again at rest answers released: false'],
  ] as const) {
    it.fails(`seed ${seed} still breaks an invariant: ${why}`, async () => {
      expect((await runSeed(seed)).violations).toEqual([]);
    });
  }
});
