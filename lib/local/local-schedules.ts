import { nextFires, type ScheduleDefinition, scheduledTicket } from '../agent/define-schedule.ts';
import { errorMessage } from '../core/errors.ts';
import type { Ticket } from '../core/messages.ts';
import { type Clock, systemClock } from '../ports/clock.ts';
import type { TicketQueue } from '../ports/queues.ts';

export interface LocalSchedulesOptions {
  readonly schedules: readonly ScheduleDefinition[];
  readonly tickets: TicketQueue;
  readonly clock?: Clock;
  /** Each fire and each failed send, for the developer's terminal. */
  readonly log?: (line: string) => void;
}

export interface LocalSchedules {
  /** Each schedule's next fire time. */
  next(): { readonly name: string; readonly at: Date }[];
  stop(): void;
}

/** setTimeout's limit: a fire further away waits in steps of this. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * What EventBridge Scheduler does on AWS, for `baton dev`: puts each schedule's ticket on the
 * local tickets queue at its fire times, the ticket id carrying the fire time as on AWS. Fires
 * missed while `baton dev` was not running are not made up (Scheduler's flexible window is off
 * too); a send that fails is logged, and the next fire comes as planned.
 */
export function startLocalSchedules(options: LocalSchedulesOptions): LocalSchedules {
  const clock = options.clock ?? systemClock;
  const log = options.log ?? (() => {});
  const timers = new Map<string, { at: Date; cancel: () => void }>();
  let stopped = false;

  const plan = (schedule: ScheduleDefinition, after: Date) => {
    if (stopped) return;
    const [at] = nextFires(schedule, after, 1);
    if (at === undefined) return; // a cron whose last year has passed
    const wait = () => {
      const left = at.getTime() - clock.now();
      const timer = setTimeout(
        () => (left > MAX_TIMER_MS ? wait() : void fire(schedule, at)),
        Math.min(left, MAX_TIMER_MS),
      );
      timer.unref?.();
      timers.set(schedule.name, { at, cancel: () => clearTimeout(timer) });
    };
    wait();
  };

  const fire = async (schedule: ScheduleDefinition, at: Date) => {
    const ticket = scheduledTicket(schedule, at) as Ticket;
    try {
      await options.tickets.submit(ticket);
      log(`schedule ${schedule.name}: ticket ${ticket.ticketId} sent`);
    } catch (error) {
      log(`schedule ${schedule.name}: ticket ${ticket.ticketId} not sent: ${errorMessage(error)}`);
    }
    plan(schedule, at);
  };

  const now = new Date(clock.now());
  for (const schedule of options.schedules) plan(schedule, now);
  return {
    next: () => [...timers].map(([name, { at }]) => ({ name, at })),
    stop: () => {
      stopped = true;
      for (const { cancel } of timers.values()) cancel();
      timers.clear();
    },
  };
}
