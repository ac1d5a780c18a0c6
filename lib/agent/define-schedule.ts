import { Cron } from 'croner';
import { InvalidInputError } from '../core/errors.ts';
import { DEFAULT_TENANT } from '../core/ids.ts';
import { Ticket } from '../core/messages.ts';
import { NAME_PATTERN } from '../core/resources.ts';
import type { AgentDefinition } from './define-agent.ts';

/**
 * Recurring work: a ticket template put on the tickets queue at each fire time. On AWS an
 * EventBridge Scheduler schedule sends it (infra/constructs/baton-schedules.ts); `baton dev`
 * fires the same schedules locally (lib/local/local-schedules.ts). The ticket id is derived from
 * the fire time, so a fire delivered twice (Scheduler delivers at least once) is one session.
 */
export interface ScheduleOptions {
  /** Unique among the deployment's schedules; part of every ticket id it fires. */
  readonly name: string;
  /** The agent the tickets start, or its name. */
  readonly agent: AgentDefinition | string;
  /** The ticket's input, as the agent's input schema admits it; at most 6 KiB of JSON (Scheduler's target input is at most 8 KiB). */
  readonly input: unknown;
  /** @default 'default' */
  readonly tenant?: string;
  /** A fixed rate: `'5 minutes'`, `'1 hour'`, `'2 days'` (EventBridge Scheduler's `rate()`). */
  readonly every?: string;
  /**
   * An EventBridge Scheduler cron expression's six fields, `minutes hours day-of-month month
   * day-of-week year` — e.g. `'0 9 ? * MON-FRI *'`: one of day-of-month and day-of-week is `?`.
   */
  readonly cron?: string;
  /** IANA time zone the cron is read in. @default 'UTC' */
  readonly timezone?: string;
  readonly description?: string;
}

export interface ScheduleDefinition {
  readonly name: string;
  readonly agent: string;
  readonly input: unknown;
  readonly tenant: string;
  /** What EventBridge Scheduler takes: `rate(5 minutes)` or `cron(0 9 ? * MON-FRI *)`. */
  readonly expression: string;
  readonly timezone: string;
  readonly description?: string | undefined;
}

/** The template's input lives in the schedule itself; Scheduler caps a target's input at 8 KiB with the ticket around it. */
export const MAX_SCHEDULE_INPUT_BYTES = 6 * 1024;

const RATE = /^(\d+) (minute|minutes|hour|hours|day|days)$/;
const UNIT_MS = { minute: 60_000, hour: 3_600_000, day: 86_400_000 } as const;

/** Validates a schedule once, where it is defined: a bad one fails the deploy (and `baton dev`) naming what is wrong. */
export function defineSchedule(options: ScheduleOptions): ScheduleDefinition {
  const where = `schedule "${options.name}"`;
  if (!NAME_PATTERN.test(options.name)) throw new InvalidInputError(`${where}: name must match ${NAME_PATTERN}`);
  const agent = typeof options.agent === 'string' ? options.agent : options.agent.name;
  const tenant = options.tenant ?? DEFAULT_TENANT;
  if ((options.every === undefined) === (options.cron === undefined))
    throw new InvalidInputError(`${where}: give exactly one of every (a rate) or cron`);
  const timezone = options.timezone ?? 'UTC';
  const expression = options.every !== undefined ? rateExpression(options.every, where) : `cron(${options.cron})`;
  const definition: ScheduleDefinition = {
    name: options.name,
    agent,
    input: options.input,
    tenant,
    expression,
    timezone,
    description: options.description,
  };
  if (options.cron !== undefined) cronOf(definition, where);
  const bytes = Buffer.byteLength(JSON.stringify(options.input ?? null));
  if (bytes > MAX_SCHEDULE_INPUT_BYTES)
    throw new InvalidInputError(
      `${where}: input is ${bytes} bytes, over ${MAX_SCHEDULE_INPUT_BYTES}; put large inputs where the agent reads them`,
    );
  // The ticket it fires must be one intake can admit (agent name, tenant, id).
  const ticket = Ticket.safeParse(scheduledTicket(definition, new Date(0)));
  if (!ticket.success) throw new InvalidInputError(`${where}: ${ticket.error.issues.map((i) => i.message).join('; ')}`);
  if (typeof options.agent !== 'string' && options.agent.input !== undefined) {
    const parsed = options.agent.input.safeParse(options.input);
    if (!parsed.success)
      throw new InvalidInputError(`${where}: input does not match agent "${agent}": ${parsed.error.message}`);
  }
  return definition;
}

function rateExpression(every: string, where: string): string {
  const match = RATE.exec(every.trim());
  const n = Number(match?.[1]);
  if (!match || !(n >= 1))
    throw new InvalidInputError(`${where}: every must read like '5 minutes', '1 hour' or '2 days'`);
  // Scheduler wants the singular for 1 and the plural otherwise.
  const unit = match[2]!.replace(/s$/, '');
  return `rate(${n} ${n === 1 ? unit : `${unit}s`})`;
}

/** EventBridge numbers weekdays from Sunday = 1; the evaluator from Sunday = 0 (names need no change). */
const weekdaysFromZero = (field: string): string =>
  field.replace(/(^|[,-])([1-7])(?=$|[,\-/#L])/g, (_, before: string, day: string) => `${before}${Number(day) - 1}`);

/** The cron's evaluator: EventBridge's six fields with seconds prepended and weekdays renumbered. */
function cronOf(schedule: ScheduleDefinition, where: string): Cron {
  const fields = /^cron\((.*)\)$/.exec(schedule.expression)?.[1]?.trim().split(/\s+/) ?? [];
  if (fields.length !== 6)
    throw new InvalidInputError(`${where}: cron needs six fields (minutes hours day-of-month month day-of-week year)`);
  if (fields[2] !== '?' && fields[4] !== '?')
    throw new InvalidInputError(`${where}: cron needs '?' in day-of-month or day-of-week, as EventBridge does`);
  try {
    const [minutes, hours, dayOfMonth, month, dayOfWeek, year] = fields as [
      string,
      string,
      string,
      string,
      string,
      string,
    ];
    const pattern = `0 ${minutes} ${hours} ${dayOfMonth} ${month} ${weekdaysFromZero(dayOfWeek)} ${year}`;
    // '?' reads as '*', and day-of-month and day-of-week combine with AND (not classic cron's OR),
    // so '? * MON-FRI' means weekdays.
    return new Cron(pattern, { timezone: schedule.timezone, mode: '7-part', legacyMode: false, paused: true });
  } catch (error) {
    throw new InvalidInputError(`${where}: cron is invalid: ${(error as Error).message}`);
  }
}

/** The fire times after `after`, at most `count` of them. */
export function nextFires(schedule: ScheduleDefinition, after: Date, count: number): Date[] {
  const rate = /^rate\((\d+) (minute|hour|day)s?\)$/.exec(schedule.expression);
  if (rate) {
    // A rate counts from the schedule's creation on AWS; locally, from the epoch, so fires land on round times.
    const period = Number(rate[1]) * UNIT_MS[rate[2] as keyof typeof UNIT_MS];
    const first = Math.floor(after.getTime() / period) * period + period;
    return Array.from({ length: count }, (_, i) => new Date(first + i * period));
  }
  return cronOf(schedule, `schedule "${schedule.name}"`).nextRuns(count, after);
}

/** The time as EventBridge Scheduler's `<aws.scheduler.scheduled-time>` prints it: ISO 8601, whole seconds, UTC. */
export const scheduledTime = (at: Date): string => at.toISOString().replace(/\.\d{3}Z$/, 'Z');

/** The placeholder Scheduler replaces with the fire time in a target's input. */
export const SCHEDULED_TIME_PLACEHOLDER = '<aws.scheduler.scheduled-time>';

/** The ticket a fire at `at` sends; one fire time, one ticket id, one session however often it is delivered. */
export function scheduledTicket(schedule: ScheduleDefinition, at: Date | typeof SCHEDULED_TIME_PLACEHOLDER) {
  const time = typeof at === 'string' ? at : scheduledTime(at);
  return {
    v: 1 as const,
    ticketId: `schedule:${schedule.name}:${time}`,
    agent: schedule.agent,
    ...(schedule.tenant === DEFAULT_TENANT ? {} : { tenant: schedule.tenant }),
    input: schedule.input,
  };
}
