import * as z from 'zod';
import { defineTool, type ToolDefinition } from './define-tool.ts';

/**
 * Durable timers for tools. A tool that returns `parkFor(…)` or `parkUntil(…)` parks the session:
 * the runtime journals a `timer` entry, releases the lease and holds no compute; a delayed kick
 * (chained past SQS's 15-minute cap) wakes it at the time, and the call's result is then `output`
 * (or `{ wokeAt }`). A cancel of the session wakes it and ends the turn.
 */

const PARK = Symbol.for('baton.park');

/** What a tool returns to park the session: a delay or a time, and the call's result once woken. */
export interface ParkRequest {
  readonly [PARK]: true;
  readonly seconds?: number | undefined;
  /** Epoch milliseconds. */
  readonly until?: number | undefined;
  readonly output?: unknown;
}

/** Parks the session for `seconds`; the call's result is `output` when it wakes. */
export function parkFor(seconds: number, output?: unknown): ParkRequest {
  return { [PARK]: true, seconds, ...(output === undefined ? {} : { output }) };
}

/** Parks the session until `time` (a Date, epoch ms or an ISO 8601 string); the call's result is `output` when it wakes. */
export function parkUntil(time: Date | number | string, output?: unknown): ParkRequest {
  const until = time instanceof Date ? time.getTime() : typeof time === 'number' ? time : Date.parse(time);
  return { [PARK]: true, until, ...(output === undefined ? {} : { output }) };
}

export function isParkRequest(value: unknown): value is ParkRequest {
  return typeof value === 'object' && value !== null && (value as Partial<ParkRequest>)[PARK] === true;
}

/** The wake-up time of a park request at `now`, or why it cannot be kept. */
export function wakeTime(request: ParkRequest, now: number, maxMs: number): { wakeAt: number } | { error: string } {
  const wakeAt = request.until ?? now + (request.seconds ?? Number.NaN) * 1000;
  if (!Number.isFinite(wakeAt)) return { error: 'park request names no valid time' };
  if (wakeAt - now > maxMs)
    return { error: `cannot park more than ${Math.round(maxMs / 86_400_000)} days ahead (the session's retention)` };
  return { wakeAt: Math.max(now, Math.ceil(wakeAt)) };
}

const WaitInput = z
  .object({
    seconds: z.number().positive().optional().describe('How long to wait.'),
    until: z.iso.datetime({ offset: true }).optional().describe('When to wake, as an ISO 8601 date-time.'),
  })
  .refine((input) => (input.seconds === undefined) !== (input.until === undefined), 'give either seconds or until');

/**
 * The built-in `wait` tool: the agent parks its session for `seconds` or until an ISO time
 * ("check the carrier again in 2 hours"), holding no lease and no compute, and its result is
 * `{ wokeAt }` when it wakes.
 * @example defineAgent({ …, tools: [waitTool(), …] })
 */
export function waitTool(options: { name?: string } = {}): ToolDefinition<z.infer<typeof WaitInput>, ParkRequest> {
  return defineTool({
    name: options.name ?? 'wait',
    description: 'Waits (durably, holding nothing) for a number of seconds or until a time, then goes on.',
    input: WaitInput,
    effect: 'pure',
    maxDurationMs: 1_000,
    run: async (input) => (input.until !== undefined ? parkUntil(input.until) : parkFor(input.seconds ?? 0)),
  });
}
