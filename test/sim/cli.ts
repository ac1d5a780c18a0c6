import { appendFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { runSeed, type SeedResult } from './run.ts';

/**
 * `npm run sim -- --seeds N [--seed S] [--verbose]`: runs seeds S, S+1, … S+N−1 (S defaults to
 * 1) and prints each failing seed with the invariants it broke and the last events of its trace;
 * `--seed S` alone replays one seed, identically; `--report FILE` writes each failing seed's
 * violations as a JSON line. Ends with the seeds per second.
 */
const { values } = parseArgs({
  options: {
    seeds: { type: 'string' },
    seed: { type: 'string' },
    verbose: { type: 'boolean', default: false },
    'stop-on-failure': { type: 'boolean', default: false },
    quiet: { type: 'boolean', default: false },
    /** Writes each failing seed's violations to this file, one JSON line per seed. */
    report: { type: 'string' },
  },
});

const first = Number(values.seed ?? 1);
const count = Number(values.seeds ?? (values.seed !== undefined ? 1 : 100));
if (!Number.isInteger(first) || !Number.isInteger(count) || count < 1) {
  console.error('usage: npm run sim -- [--seeds N] [--seed S] [--verbose] [--stop-on-failure]');
  process.exit(2);
}

if (values.report) writeFileSync(values.report, '');
const started = performance.now();
const failed: SeedResult[] = [];
const byInvariant = new Map<string, { seeds: number[]; example: string }>();
let ran = 0;
let stopsAsked = 0;
let stopsRequested = 0;
let stopsAlreadyEnded = 0;
let turnsStopped = 0;
for (let seed = first; seed < first + count; seed++) {
  const result = await runSeed(seed, { traceAll: values.verbose });
  ran++;
  stopsAsked += result.stats.stopsAsked;
  stopsRequested += result.stats.stopsRequested;
  stopsAlreadyEnded += result.stats.stopsAlreadyEnded;
  turnsStopped += result.stats.turnsStopped;
  if (values.verbose) {
    console.log(
      `seed ${seed}: ${result.ok ? 'ok' : 'FAILED'} trace ${result.traceHash} ${JSON.stringify(result.stats)}`,
    );
    console.log(`  plan: ${result.plan}`);
    console.log(`  faults: ${JSON.stringify(result.profile)}`);
    for (const line of result.traceAll ?? []) console.log(`  ${line}`);
  }
  if (!result.ok) {
    failed.push(result);
    for (const v of result.violations) {
      const entry = byInvariant.get(v.invariant) ?? { seeds: [], example: v.detail };
      if (!entry.seeds.includes(seed)) entry.seeds.push(seed);
      byInvariant.set(v.invariant, entry);
    }
    if (!values.quiet) printFailure(result);
    if (values.report)
      appendFileSync(values.report, `${JSON.stringify({ seed, plan: result.plan, violations: result.violations })}\n`);
    if (values['stop-on-failure']) break;
  }
  if (!values.quiet && !values.verbose && ran % 100 === 0)
    console.error(
      `… ${ran} seeds, ${failed.length} failed, ${(ran / ((performance.now() - started) / 1000)).toFixed(1)} seeds/s`,
    );
}
const seconds = (performance.now() - started) / 1000;

console.log(`\n${ran} seeds (${first}…${first + ran - 1}): ${ran - failed.length} passed, ${failed.length} failed`);
for (const [invariant, { seeds, example }] of [...byInvariant].sort((a, b) => a[1].seeds[0]! - b[1].seeds[0]!))
  console.log(`  ${invariant}: ${seeds.length} seeds (first ${seeds[0]}; e.g. ${example.slice(0, 140)})`);
console.log(
  `stops of one turn: ${stopsAsked} asked (${stopsRequested} requested, ${stopsAlreadyEnded} already ended), ${turnsStopped} turns ended stopped`,
);
console.log(`${(ran / seconds).toFixed(1)} seeds/s (${seconds.toFixed(1)} s)`);
process.exit(failed.length === 0 ? 0 : 1);

function printFailure(result: SeedResult): void {
  console.log(`\nseed ${result.seed} FAILED (replay: npm run sim -- --seed ${result.seed} --verbose)`);
  console.log(`  plan: ${result.plan}`);
  for (const v of result.violations) console.log(`  ${v.invariant}: ${v.detail}`);
  console.log(`  last ${result.traceTail.length} events (trace ${result.traceHash}):`);
  for (const line of result.traceTail) console.log(`    ${line}`);
}
