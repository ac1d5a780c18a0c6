import { InvalidInputError } from '../core/errors.ts';

/** A length of time: milliseconds, or a number with a unit (`'500ms'`, `'30s'`, `'15m'`, `'2h'`, `'7d'`, `'1h30m'`). */
export type Duration = number | string;

const UNIT_MS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};

const PART = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/gy;

/**
 * Milliseconds of a duration; throws naming the input when it is not one (a negative or
 * non-finite number, an unknown unit, trailing text).
 * @example durationMs('1h30m') // 5_400_000
 */
export function durationMs(duration: Duration): number {
  if (typeof duration === 'number') {
    if (!Number.isFinite(duration) || duration < 0)
      throw new InvalidInputError(`duration must be a finite number of milliseconds ≥ 0, got ${duration}`);
    return duration;
  }
  const text = duration.trim();
  let total = 0;
  let matched = 0;
  PART.lastIndex = 0;
  for (let part = PART.exec(text); part !== null; part = PART.exec(text)) {
    total += Number(part[1]) * UNIT_MS[part[2]!]!;
    matched = PART.lastIndex;
  }
  if (text.length === 0 || matched !== text.length)
    throw new InvalidInputError(
      `duration "${duration}" is not a number with a unit (ms, s, m, h, d), e.g. '2h', '30s', '1h30m'`,
    );
  return Math.round(total);
}
