import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The files that take minutes, longest first. Vitest orders files by their last run's duration,
 * but a fresh clone has no record of one and falls back to file size, which put the chaos run
 * (a small file, the longest run) near the end: the suite then waited for it alone.
 */
const SLOWEST_FIRST = [
  'test/chaos/chaos.test.ts',
  'test/infra/package.test.ts',
  'test/integration/demo.test.ts',
  'test/browser/console.test.ts',
];

const rank = (spec: TestSpecification): number => {
  const i = SLOWEST_FIRST.findIndex((file) => spec.moduleId.endsWith(file));
  return i === -1 ? SLOWEST_FIRST.length : i;
};

/** Vitest's order (its recorded durations, else file size), with the known slowest files first. */
export default class SlowestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    // Array.prototype.sort is stable: every other file keeps Vitest's order.
    return sorted.sort((a, b) => rank(a) - rank(b));
  }
}
