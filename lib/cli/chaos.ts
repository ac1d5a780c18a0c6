import { parseChaosArgs } from '../chaos/chaos-options.ts';

export { CHAOS_USAGE } from '../chaos/chaos-options.ts';

import { runChaos } from '../chaos/chaos-runner.ts';
import { formatFigureTable, formatVerdict } from '../chaos/figure-table.ts';
import type { CommandIo } from './session-commands.ts';

/**
 * `baton chaos [--tickets N] [--workers W] [--kill-every S] …`: runs a chaos experiment on a
 * local stack of its own and prints the figure table. Exit code 1 on any violation, or when the
 * run proves nothing (no kill landed mid-step, an enabled fault never fired).
 */
export async function chaos(args: string[], io: CommandIo): Promise<number> {
  const options = parseChaosArgs(args, io.connect.stateDir);
  const report = await runChaos(options, {
    signal: io.signal,
    command: ['npm run chaos --', ...args].join(' '),
    workerOutput: process.env.BATON_CHAOS_WORKER_OUTPUT === '1' ? 'inherit' : 'ignore',
  });
  if (io.json) io.out(JSON.stringify(report));
  else {
    io.out(`\n${report.command}\n`);
    io.out(formatFigureTable(report));
    io.out('');
    io.out(formatVerdict(report));
  }
  return report.violations.length === 0 && report.vacuous.length === 0 ? 0 : 1;
}
