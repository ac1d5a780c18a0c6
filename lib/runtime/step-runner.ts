import type { Kick } from '../core/messages.ts';
import type { RuntimeDeps } from './deps.ts';
import { acquireForKick, legReason } from './leg/acquire.ts';
import type { Invocation } from './leg/invocation.ts';
import { Leg } from './leg/leg.ts';
import type { KickOutcome } from './leg/leg-context.ts';

export type { Invocation } from './leg/invocation.ts';
export type { KickOutcome } from './leg/leg-context.ts';

/**
 * Handles one kick: acquire the session's lease, load and fold the journal, run the agent loop
 * step by step, and leave by finishing, waiting or yielding to a continuation. The parts live in
 * leg/: acquire, leg signals, journal writer, model, tool and turn steps, retry, hand-off.
 */
export async function runKick(kick: Kick, invocation: Invocation, deps: RuntimeDeps): Promise<KickOutcome> {
  const log = deps.telemetry.logger.child({
    tenant: kick.session.tenant,
    agent: kick.session.agent,
    sessionId: kick.session.id,
    kick: kick.reason,
  });
  const acquired = await acquireForKick(kick, invocation, deps, log);
  if (typeof acquired === 'string') return acquired;
  if (acquired.recovery) deps.telemetry.metrics.count('Recoveries');
  deps.telemetry.metrics.count('Legs');
  const reason = legReason(kick, acquired);
  return new Leg(kick.session, acquired.record, acquired.owner, reason, invocation, deps, log).run();
}
