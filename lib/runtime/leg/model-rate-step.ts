import type { AgentDefinition } from '../../agent/define-agent.ts';
import { limitOf, rateScopes, rateWaitText } from '../../core/tenant-limits.ts';
import { takeModelToken } from '../fair-share.ts';
import type { LegContext } from './leg-context.ts';
import { fitsInBudget, type LegExit } from './leg-exit.ts';

/**
 * A wait for a token this short is slept in the leg (the heartbeat keeps the lease); a longer
 * one ends the leg holding no lease and a `wake` kick comes back when the token is due, as for
 * a durable timer. Two seconds is far below a lease, and a leg, and costs less than a hand-off.
 */
export const IN_LEG_RATE_WAIT_MAX_MS = 2_000;

/**
 * The tenant's model-call rate (fair sharing, issue 27 item 7): before a model call, one token
 * from each of the tenant's buckets that applies (all models, this model), shared by every worker
 * through the store. A call held back waits — in the leg when the wait is short, else holding no
 * lease, journaled as `limited` — and never fails the turn.
 */
export async function modelRateStep(leg: LegContext, agent: AgentDefinition): Promise<LegExit | undefined> {
  const { deps, key } = leg;
  if (!deps.fairShare) return undefined;
  const fairShare = { fairShare: deps.fairShare, ids: deps.ids, pause: { clock: deps.clock, random: deps.random } };
  for (const { scope, rule } of rateScopes(limitOf(deps.config.tenantLimits, key.tenant), agent.model.id)) {
    for (;;) {
      const now = deps.clock.now();
      const taken = await takeModelToken(fairShare, key.tenant, scope, rule, now);
      if (taken.ok) break;
      deps.telemetry.metrics.count('ModelCallsThrottled');
      if (taken.waitMs <= IN_LEG_RATE_WAIT_MAX_MS && fitsInBudget(leg, taken.waitMs + agent.model.maxDurationMs)) {
        await deps.clock.sleep(taken.waitMs, leg.signals.stepSignal);
        leg.signals.throwIfAborted();
        continue;
      }
      const until = now + taken.waitMs;
      leg.log.info('model call rate limit reached; waiting', { scope, until });
      await leg.journal.append('limited', {
        limit: 'model-rate',
        reason: rateWaitText(key.tenant, scope, rule, taken.waitMs),
        max: rule.perMinute,
        until,
      });
      return { kind: 'wait-timer', until };
    }
  }
  return undefined;
}
