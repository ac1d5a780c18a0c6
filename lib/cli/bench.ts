import { parseArgs } from 'node:util';
import { BENCH_SECTIONS, type BenchSection, formatBenchReport, runBench } from '../../bench/run-bench.ts';
import type { CommandIo } from './session-commands.ts';

/** `baton bench [--json] [--only SECTION,...]`: prints the figures of docs/PERFORMANCE.md. */
export async function bench(args: string[], io: CommandIo): Promise<number> {
  const { values } = parseArgs({ args, options: { only: { type: 'string' } } });
  const only = values.only?.split(',').map((s) => s.trim()) ?? [...BENCH_SECTIONS];
  const unknown = only.filter((s) => !(BENCH_SECTIONS as readonly string[]).includes(s));
  if (unknown.length > 0)
    throw new Error(`unknown bench section(s) ${unknown.join(', ')}; sections: ${BENCH_SECTIONS.join(', ')}`);
  const report = await runBench({
    sections: only as BenchSection[],
    progress: (line) => process.stderr.write(`[bench] ${line}\n`),
    ...(io.signal ? { signal: io.signal } : {}),
  });
  if (io.json) io.out(JSON.stringify(report, null, 2));
  else for (const line of formatBenchReport(report)) io.out(line);
  return 0;
}
