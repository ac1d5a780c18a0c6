import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MemoryTicketQueue } from '../../../lib/adapters/memory/memory-queues.ts';
import { defineSchedule } from '../../../lib/agent/define-schedule.ts';
import type { Ticket } from '../../../lib/core/messages.ts';
import { startLocalSchedules } from '../../../lib/local/local-schedules.ts';

const everyMinute = defineSchedule({ name: 'tick', agent: 'digest', input: { topic: 'x' }, every: '1 minute' });
const daily = defineSchedule({ name: 'daily', agent: 'digest', input: {}, cron: '0 9 * * ? *' });

describe('local schedules (what baton dev fires)', () => {
  beforeEach(() => {
    vi.useFakeTimers();
    vi.setSystemTime(new Date('2026-12-02T10:00:30Z'));
  });
  afterEach(() => vi.useRealTimers());

  it('sends each fire’s ticket at its time, the id carrying the fire time, and plans the next', async () => {
    const tickets = new MemoryTicketQueue();
    const fired = startLocalSchedules({ schedules: [everyMinute, daily], tickets });
    expect(fired.next().map((n) => [n.name, n.at.toISOString()])).toEqual([
      ['tick', '2026-12-02T10:01:00.000Z'],
      ['daily', '2026-12-03T09:00:00.000Z'],
    ]);

    await vi.advanceTimersByTimeAsync(150_000);

    expect(tickets.bodies.map((t: Ticket) => t.ticketId)).toEqual([
      'schedule:tick:2026-12-02T10:01:00Z',
      'schedule:tick:2026-12-02T10:02:00Z',
      'schedule:tick:2026-12-02T10:03:00Z',
    ]);
    expect(tickets.bodies[0]).toMatchObject({ agent: 'digest', input: { topic: 'x' } });
    fired.stop();
  });

  it('logs a fire whose send failed and fires the next one as planned', async () => {
    let failures = 1;
    const sent: string[] = [];
    const lines: string[] = [];
    const fired = startLocalSchedules({
      schedules: [everyMinute],
      tickets: {
        submit: async (ticket) => {
          if (failures-- > 0) throw new Error('queue unreachable');
          sent.push(ticket.ticketId);
        },
      },
      log: (line) => lines.push(line),
    });

    await vi.advanceTimersByTimeAsync(90_000);

    expect(lines[0]).toBe(
      'schedule tick: ticket schedule:tick:2026-12-02T10:01:00Z not sent: Error: queue unreachable',
    );
    expect(sent).toEqual(['schedule:tick:2026-12-02T10:02:00Z']);
    fired.stop();
  });

  it('fires nothing once stopped', async () => {
    const tickets = new MemoryTicketQueue();
    startLocalSchedules({ schedules: [everyMinute], tickets }).stop();
    await vi.advanceTimersByTimeAsync(180_000);
    expect(tickets.bodies).toEqual([]);
  });
});
