import type { Reporter, TestModule } from 'vitest/node';

/** How many files the summary names. */
const SHOWN = 10;

/**
 * Prints the slowest test files at the end of a run (import, setup and tests of each), so a CI
 * log tells where the suite's wall time goes without rerunning it.
 */
export default class SlowestFilesReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const files = testModules
      .map((module) => {
        const d = module.diagnostic();
        return {
          file: module.relativeModuleId,
          ms: d.environmentSetupDuration + d.prepareDuration + d.collectDuration + d.setupDuration + d.duration,
        };
      })
      .sort((a, b) => b.ms - a.ms)
      .slice(0, SHOWN);
    if (files.length === 0) return;
    const lines = files.map(({ file, ms }) => `  ${(ms / 1000).toFixed(1).padStart(7)} s  ${file}`);
    console.log(`\nSlowest test files:\n${lines.join('\n')}`);
  }
}
