import { parseArgs } from 'node:util';
import { DEMO_DEFAULTS, runDemo } from '../demo/run-demo.ts';
import type { CommandIo } from './session-commands.ts';

const positiveInteger = (flag: string, value: string | undefined): number | undefined => {
  if (value === undefined) return undefined;
  const number = Number(value);
  if (!Number.isInteger(number) || number <= 0)
    throw new Error(`${flag} must be a positive whole number, got '${value}'`);
  return number;
};

/**
 * `baton demo [--tickets N] [--workers W] [--chaos] [--timeout-s S] [--deadline-s S] [--verbose]`:
 * the order-investigation demo on the embedded local stack. Exits 0 only when every ticket
 * completed correctly and no once-only effect ran twice.
 */
export async function demo(args: string[], io: CommandIo): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      tickets: { type: 'string' },
      workers: { type: 'string' },
      chaos: { type: 'boolean' },
      'chaos-every-s': { type: 'string' },
      'timeout-s': { type: 'string' },
      'deadline-s': { type: 'string' },
      verbose: { type: 'boolean' },
      prefix: { type: 'string' },
    },
  });
  const chaosEveryS = positiveInteger('--chaos-every-s', values['chaos-every-s']);
  const { summary } = await runDemo({
    tickets: positiveInteger('--tickets', values.tickets),
    workers: positiveInteger('--workers', values.workers),
    functionTimeoutS: positiveInteger('--timeout-s', values['timeout-s']),
    deadlineS: positiveInteger('--deadline-s', values['deadline-s']) ?? DEMO_DEFAULTS.deadlineS,
    chaos: values.chaos ?? false,
    ...(chaosEveryS === undefined ? {} : { chaosEveryMs: chaosEveryS * 1000 }),
    verbose: values.verbose ?? false,
    stateDir: io.connect.stateDir,
    prefix: values.prefix,
    signal: io.signal,
    // With --json the progress goes to stderr and stdout carries only the summary object.
    output: io.json
      ? { tty: false, write: (text) => process.stderr.write(text) }
      : {
          tty: Boolean(process.stdout.isTTY) && process.env.TERM !== 'dumb',
          write: (text) => process.stdout.write(text),
        },
  });
  if (io.json) io.out(JSON.stringify(summary));
  return summary.green ? 0 : 1;
}
