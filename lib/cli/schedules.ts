import { parseArgs } from 'node:util';
import { nextFires, scheduledTicket } from '../agent/define-schedule.ts';
import { agentsModuleFor, loadSchedules } from '../local/agents-module.ts';
import type { CommandIo } from './session-commands.ts';

/**
 * `baton schedules [--agents FILE] [--count N]`: the agents module's schedules, each with its
 * next fire times and the ticket id its next fire sends. Reads the module only: nothing needs to run.
 */
export async function schedules(args: string[], io: CommandIo): Promise<number> {
  const { values } = parseArgs({ args, options: { agents: { type: 'string' }, count: { type: 'string' } } });
  const count = values.count === undefined ? 3 : Number(values.count);
  if (!Number.isInteger(count) || count < 1 || count > 100)
    throw new Error('--count must be a whole number from 1 to 100');
  const all = await loadSchedules(agentsModuleFor(values.agents));
  const now = new Date();
  const listed = all.map((s) => {
    const next = nextFires(s, now, count);
    return {
      name: s.name,
      agent: s.agent,
      tenant: s.tenant,
      expression: s.expression,
      timezone: s.timezone,
      next: next.map((d) => d.toISOString()),
      nextTicketId: next[0] === undefined ? undefined : scheduledTicket(s, next[0]).ticketId,
    };
  });
  if (io.json) {
    io.out(JSON.stringify(listed));
    return 0;
  }
  if (listed.length === 0) io.out('no schedules (export schedules = [defineSchedule({ ... })] from the agents module)');
  for (const s of listed)
    io.out(
      `${s.name}  ${s.agent}${s.tenant === 'default' ? '' : ` (tenant ${s.tenant})`}  ${s.expression} ${s.timezone}  next ${s.next.join(', ') || 'never'}`,
    );
  return 0;
}
