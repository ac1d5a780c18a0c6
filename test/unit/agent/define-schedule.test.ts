import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent } from '../../../lib/agent/define-agent.ts';
import { defineSchedule, nextFires, scheduledTicket } from '../../../lib/agent/define-schedule.ts';
import { scriptedModel } from '../../../lib/agent/scripted-model.ts';
import { InvalidInputError } from '../../../lib/core/errors.ts';
import { Ticket } from '../../../lib/core/messages.ts';

const digest = defineAgent({
  name: 'digest',
  instructions: 'Summarize.',
  input: z.object({ topic: z.string() }),
  model: scriptedModel({ script: () => ({ final: 'ok' }) }),
});

const iso = (dates: Date[]) => dates.map((d) => d.toISOString());

describe('defineSchedule', () => {
  it('reads an EventBridge cron: weekdays at 09:00 UTC, Sunday numbered 1 as EventBridge does', () => {
    const weekdays = defineSchedule({
      name: 'morning',
      agent: digest,
      input: { topic: 'news' },
      cron: '0 9 ? * MON-FRI *',
    });
    expect(weekdays.expression).toBe('cron(0 9 ? * MON-FRI *)');
    // 2026-12-04 is a Friday: the next fires skip the weekend.
    expect(iso(nextFires(weekdays, new Date('2026-12-04T09:00:00Z'), 2))).toEqual([
      '2026-12-07T09:00:00.000Z',
      '2026-12-08T09:00:00.000Z',
    ]);
    const sundays = defineSchedule({ name: 'weekly', agent: 'digest', input: {}, cron: '30 6 ? * 1 *' });
    expect(iso(nextFires(sundays, new Date('2026-12-02T00:00:00Z'), 1))).toEqual(['2026-12-06T06:30:00.000Z']);
    // The third Friday (6#3) and the last Saturday (7L) of the month.
    const third = defineSchedule({ name: 'f3', agent: 'digest', input: {}, cron: '0 12 ? * 6#3 *' });
    expect(iso(nextFires(third, new Date('2026-12-01T00:00:00Z'), 1))).toEqual(['2026-12-18T12:00:00.000Z']);
    const last = defineSchedule({ name: 's', agent: 'digest', input: {}, cron: '0 12 ? * 7L *' });
    expect(iso(nextFires(last, new Date('2026-12-01T00:00:00Z'), 1))).toEqual(['2026-12-26T12:00:00.000Z']);
  });

  it('reads the cron in its time zone and a rate on round times', () => {
    const paris = defineSchedule({
      name: 'p',
      agent: 'digest',
      input: {},
      cron: '0 9 * * ? *',
      timezone: 'Europe/Paris',
    });
    expect(iso(nextFires(paris, new Date('2026-12-02T00:00:00Z'), 1))).toEqual(['2026-12-02T08:00:00.000Z']);
    const rate = defineSchedule({ name: 'r', agent: 'digest', input: {}, every: '15 minutes' });
    expect(rate.expression).toBe('rate(15 minutes)');
    expect(iso(nextFires(rate, new Date('2026-12-02T10:07:00Z'), 2))).toEqual([
      '2026-12-02T10:15:00.000Z',
      '2026-12-02T10:30:00.000Z',
    ]);
    expect(defineSchedule({ name: 'h', agent: 'digest', input: {}, every: '1 hours' }).expression).toBe('rate(1 hour)');
  });

  it('fires a ticket whose id is the fire time, so a fire delivered twice is one session', () => {
    const s = defineSchedule({
      name: 'morning',
      agent: digest,
      input: { topic: 'news' },
      tenant: 'acme',
      every: '1 day',
    });
    const ticket = scheduledTicket(s, new Date('2026-12-03T00:00:00.000Z'));
    expect(ticket).toEqual({
      v: 1,
      ticketId: 'schedule:morning:2026-12-03T00:00:00Z',
      agent: 'digest',
      tenant: 'acme',
      input: { topic: 'news' },
    });
    expect(Ticket.safeParse(ticket).success).toBe(true);
  });

  it.each([
    ['both a rate and a cron', { every: '5 minutes', cron: '0 9 * * ? *' }, /exactly one of every/],
    ['neither', {}, /exactly one of every/],
    ['a rate in words', { every: 'often' }, /every must read like/],
    ['a zero rate', { every: '0 minutes' }, /every must read like/],
    ['a five-field cron', { cron: '0 9 * * *' }, /six fields/],
    ['a cron without ?', { cron: '0 9 * * MON *' }, /'\?' in day-of-month or day-of-week/],
    ['hour 25', { cron: '0 25 ? * * *' }, /cron is invalid/],
    ['a name with spaces', { every: '1 day', name: 'no spaces' }, /name must match/],
    ['an input the agent refuses', { every: '1 day', input: { topic: 7 } }, /input does not match agent "digest"/],
    ['a 7 KB input', { every: '1 day', input: { topic: 'x'.repeat(7000) } }, /over 6144/],
    ['a reserved tenant', { every: '1 day', tenant: 'tickets' }, /tenant/],
  ])('refuses %s, naming what is wrong', (_what, options, message) => {
    const define = () => defineSchedule({ name: 'bad', agent: digest, input: { topic: 't' }, ...options });
    expect(define).toThrow(InvalidInputError);
    expect(define).toThrow(message);
  });
});
