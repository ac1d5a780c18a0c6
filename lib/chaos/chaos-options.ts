import { parseArgs } from 'node:util';
import { type FaultConfig, parseFaultSpec } from '../adapters/faults/fault-config.ts';

/** Everything a chaos run is told; every duration is configuration, so CI runs are short. */
export interface ChaosOptions {
  readonly tickets: number;
  readonly workers: number;
  /** SIGKILL a random worker this often (0: never). */
  readonly killEveryMs: number;
  /** SIGSTOP a random worker this often (0: never)… */
  readonly pauseEveryMs: number;
  /** …and SIGCONT it after this long: longer than the lease TTL, so its leases expire under it. */
  readonly pauseForMs: number;
  /** Arm the next named crash point (kill or pause inside the runtime; one armed at a time) this often (0: never). */
  readonly failpointEveryMs: number;
  readonly faults: FaultConfig;
  /** Share of the tickets that are long-haul jobs (the rest are order investigations). */
  readonly longHaulShare: number;
  readonly longHaulSteps: number;
  readonly longHaulStepMs: number;
  /** Share of the tickets that are dispatchers fanning out to two background tasks. */
  readonly delegateShare: number;
  /** Share of the tickets that are support-desk conversations (turns sent, a message injected, a refund approved). */
  readonly conversationShare: number;
  /** Tickets sent per second (0: all at once). */
  readonly submitPerSecond: number;
  readonly leaseTtlMs: number;
  readonly sweepIntervalMs: number;
  readonly reserveMs: number;
  readonly functionTimeoutS: number;
  readonly visibilityTimeoutS: number;
  /** The simulated services' latency multiplier and transient failure rate. */
  readonly latencyScale: number;
  readonly failureRate: number;
  /** Give up waiting for every ticket to finish after this long. */
  readonly quiesceTimeoutMs: number;
  /** Folder for local.json, the ledger, fault counts and the failpoint log; a fresh temp folder when absent. */
  readonly stateDir?: string | undefined;
}

/** The fault mix of the reference run: 5% throttling and every other kind switched on. */
export const DEFAULT_FAULT_SPEC =
  'dynamoThrottle=0.05,dynamo5xx=0.01,commitThenFail=0.02,sqsSendFail=0.02,latencyMs=20,duplicateKicks';

/**
 * Defaults sized for a laptop: a lease TTL that the examples' once-only refund still fits in
 * (its 1.5 s maximum + 1 s of clock skew), a fast sweep, and a function timeout short enough
 * that long-haul jobs need several legs.
 */
export const DEFAULT_CHAOS_OPTIONS: ChaosOptions = {
  tickets: 200,
  workers: 4,
  killEveryMs: 3_000,
  pauseEveryMs: 8_000,
  pauseForMs: 4_500,
  failpointEveryMs: 8_000,
  faults: parseFaultSpec(DEFAULT_FAULT_SPEC),
  longHaulShare: 0.25,
  longHaulSteps: 60,
  longHaulStepMs: 100,
  delegateShare: 0.1,
  conversationShare: 0.1,
  submitPerSecond: 0,
  leaseTtlMs: 3_000,
  sweepIntervalMs: 500,
  reserveMs: 2_000,
  functionTimeoutS: 10,
  visibilityTimeoutS: 20,
  latencyScale: 0.02,
  failureRate: 0.05,
  quiesceTimeoutMs: 600_000,
};

export const CHAOS_USAGE = `baton chaos [--tickets N] [--workers W] [--kill-every S] [--pause-every S] [--pause-for S]
            [--failpoint-every S] [--faults SPEC|none] [--long-haul-share F] [--long-haul-steps N] [--delegate-share F]
            [--conversation-share F] [--step-ms MS] [--submit-rate PER_S] [--lease-ttl-ms MS] [--sweep-interval-ms MS]
            [--reserve-ms MS] [--timeout-s S] [--visibility-s S] [--latency-scale F]
            [--failure-rate F] [--quiesce-timeout S]`;

const number = (flag: string, value: string | undefined, min = 0, max = Number.POSITIVE_INFINITY) => {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < min || n > max) {
    throw new Error(`${flag} must be a number from ${min} to ${max}, got '${value}'`);
  }
  return n;
};
const seconds = (flag: string, value: string | undefined) => {
  const n = number(flag, value);
  return n === undefined ? undefined : Math.round(n * 1000);
};

/** Parses `baton chaos` flags over the defaults; a bad value throws an error naming its flag. */
export function parseChaosArgs(args: readonly string[], stateDir?: string): ChaosOptions {
  const { values } = parseArgs({
    args: [...args],
    options: {
      tickets: { type: 'string' },
      workers: { type: 'string' },
      'kill-every': { type: 'string' },
      'pause-every': { type: 'string' },
      'pause-for': { type: 'string' },
      'failpoint-every': { type: 'string' },
      faults: { type: 'string' },
      'long-haul-share': { type: 'string' },
      'delegate-share': { type: 'string' },
      'conversation-share': { type: 'string' },
      'long-haul-steps': { type: 'string' },
      'step-ms': { type: 'string' },
      'submit-rate': { type: 'string' },
      'lease-ttl-ms': { type: 'string' },
      'sweep-interval-ms': { type: 'string' },
      'reserve-ms': { type: 'string' },
      'timeout-s': { type: 'string' },
      'visibility-s': { type: 'string' },
      'latency-scale': { type: 'string' },
      'failure-rate': { type: 'string' },
      'quiesce-timeout': { type: 'string' },
    },
    allowPositionals: false,
  });
  const d = DEFAULT_CHAOS_OPTIONS;
  const faults =
    values.faults === undefined
      ? d.faults
      : values.faults === 'none'
        ? parseFaultSpec('{}')
        : parseFaultSpec(values.faults);
  const options: ChaosOptions = {
    tickets: number('--tickets', values.tickets, 1) ?? d.tickets,
    workers: number('--workers', values.workers, 1, 64) ?? d.workers,
    killEveryMs: seconds('--kill-every', values['kill-every']) ?? d.killEveryMs,
    pauseEveryMs: seconds('--pause-every', values['pause-every']) ?? d.pauseEveryMs,
    pauseForMs: seconds('--pause-for', values['pause-for']) ?? d.pauseForMs,
    failpointEveryMs: seconds('--failpoint-every', values['failpoint-every']) ?? d.failpointEveryMs,
    faults,
    longHaulShare: number('--long-haul-share', values['long-haul-share'], 0, 1) ?? d.longHaulShare,
    longHaulSteps: number('--long-haul-steps', values['long-haul-steps'], 1) ?? d.longHaulSteps,
    delegateShare: number('--delegate-share', values['delegate-share'], 0, 1) ?? d.delegateShare,
    conversationShare: number('--conversation-share', values['conversation-share'], 0, 1) ?? d.conversationShare,
    longHaulStepMs: number('--step-ms', values['step-ms'], 0, 1_000) ?? d.longHaulStepMs,
    submitPerSecond: number('--submit-rate', values['submit-rate'], 0) ?? d.submitPerSecond,
    leaseTtlMs: number('--lease-ttl-ms', values['lease-ttl-ms'], 100) ?? d.leaseTtlMs,
    sweepIntervalMs: number('--sweep-interval-ms', values['sweep-interval-ms'], 50) ?? d.sweepIntervalMs,
    reserveMs: number('--reserve-ms', values['reserve-ms'], 0) ?? d.reserveMs,
    functionTimeoutS: number('--timeout-s', values['timeout-s'], 1) ?? d.functionTimeoutS,
    visibilityTimeoutS: number('--visibility-s', values['visibility-s'], 1) ?? d.visibilityTimeoutS,
    latencyScale: number('--latency-scale', values['latency-scale'], 0) ?? d.latencyScale,
    failureRate: number('--failure-rate', values['failure-rate'], 0, 1) ?? d.failureRate,
    quiesceTimeoutMs: seconds('--quiesce-timeout', values['quiesce-timeout']) ?? d.quiesceTimeoutMs,
    stateDir,
  };
  if (!Number.isInteger(options.tickets) || !Number.isInteger(options.workers)) {
    throw new Error('--tickets and --workers must be whole numbers');
  }
  if (options.pauseEveryMs > 0 && options.pauseForMs <= options.leaseTtlMs) {
    throw new Error(
      `--pause-for (${options.pauseForMs} ms) must be longer than the lease TTL (${options.leaseTtlMs} ms): a pause shorter than the lease tests nothing`,
    );
  }
  return options;
}
