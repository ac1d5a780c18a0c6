import type { PendingCall } from '../../core/fold.ts';
import type { LegContext } from './leg-context.ts';

/** A durable timer is due: its call's result is what the tool asked for, or when it woke. */
export async function wakeTimer(leg: LegContext, pending: PendingCall): Promise<void> {
  const now = leg.deps.clock.now();
  await leg.journal.append('tool', {
    callId: pending.call.id,
    tool: pending.call.name,
    ok: true,
    output: pending.timer?.output ?? { wokeAt: new Date(now).toISOString() },
  });
  leg.deps.telemetry.metrics.count('TimersWoken');
}
