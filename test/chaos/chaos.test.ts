import { describe, expect, inject, it } from 'vitest';
import { DEFAULT_CHAOS_OPTIONS } from '../../lib/chaos/chaos-options.ts';
import { runChaos } from '../../lib/chaos/chaos-runner.ts';
import { formatFigureTable, formatVerdict } from '../../lib/chaos/figure-table.ts';

/** The CI-sized chaos run: a few minutes on two cores. Bigger runs: `npm run chaos -- --tickets 1000`. */
const CI_RUN = {
  ...DEFAULT_CHAOS_OPTIONS,
  tickets: 32,
  workers: 3,
  killEveryMs: 4_000,
  pauseEveryMs: 10_000,
  failpointEveryMs: 6_000,
  longHaulSteps: 40,
  // Three support-desk conversations: further turns, a message injected into a running turn, an approved refund.
  conversationShare: 0.15,
  // Every ticket usually finishes in about two minutes; a machine busy with the rest of the suite
  // and a pegged core took longer. Past this the run stops waiting and unfinished work counts as lost.
  quiesceTimeoutMs: 240_000,
};
/** Above the quiesce timeout plus the stack's start and the settling after it. */
const RUN_TIMEOUT_MS = 420_000;

describe('Baton under chaos', () => {
  it(
    'loses nothing (conversation turns included), repeats no once-only effect and leaves nothing stuck while workers are killed and paused under injected faults',
    async () => {
      // Arrange
      const { region, endpoints } = inject('baton');

      // The run's log (kills, restarts, progress) is printed only when the run fails, for the post-mortem.
      const started = Date.now();
      const lines: string[] = [];
      const log = (line: string) => lines.push(`${((Date.now() - started) / 1000).toFixed(1).padStart(6)} s ${line}`);

      // Act
      const report = await runChaos(CI_RUN, {
        emulators: { region, endpoints },
        prefix: `chaos${process.pid}`,
        log,
        command: 'test/chaos/chaos.test.ts',
      });
      const failed = report.violations.length > 0 || report.vacuous.length > 0;
      console.log(`${failed ? `${lines.join('\n')}\n` : ''}${formatFigureTable(report)}\n${formatVerdict(report)}`);

      // Assert: the run broke things…
      expect(report.vacuous).toEqual([]);
      expect(report.kills.external).toBeGreaterThan(0);
      expect(report.figures.recoveries).toBeGreaterThan(0);
      expect(report.figures.conversations).toBe(3);
      expect(report.figures.conversationTurns).toBeGreaterThanOrEqual(6);
      // …and every invariant held.
      expect(report.violations).toEqual([]);
      expect(report.figures).toMatchObject({ lost: 0, duplicateEffects: 0, stuck: 0 });
    },
    RUN_TIMEOUT_MS,
  );
});
