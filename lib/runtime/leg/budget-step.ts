import { inputDigest } from '../../core/content-digest.ts';
import { spentOf } from '../../core/fold.ts';
import { BUDGET_APPROVAL_TOOL, describeLimitReached, type LimitReached } from '../../core/spend.ts';
import type { LegContext } from './leg-context.ts';
import type { LegExit } from './leg-exit.ts';

/**
 * A spend limit reached before a model call. With `onBudget: 'ask'` the turn asks a human to let
 * it go on, as an approval request the session waits on holding no lease (`baton approve`
 * answers it; approved, the limits count again from there); otherwise, or once declined, the
 * turn ends `budget-exceeded` with what was spent.
 */
export async function budgetStep(
  leg: LegContext,
  action: {
    readonly reached?: LimitReached | undefined;
    readonly ask: boolean;
    readonly declined?: string | undefined;
  },
): Promise<LegExit | undefined> {
  const spent = spentOf(leg.journal.view);
  if (action.ask && action.reached) {
    // The request's own seq names it: each limit reached gets its own decision.
    const seq = leg.journal.view.lastSeq + 1;
    const input = { ...action.reached, totals: spent };
    await leg.journal.append('approval', {
      callId: `budget-${seq}`,
      tool: BUDGET_APPROVAL_TOOL,
      input,
      modelSeq: seq,
      digest: inputDigest(JSON.stringify(input)),
    });
    leg.log.info('spend limit reached: asking to go on', { ...action.reached });
    return undefined;
  }
  const why = action.reached
    ? describeLimitReached(action.reached, spent)
    : `going on past a spend limit was declined (${action.declined ?? 'no reason given'})`;
  leg.log.info('spend limit reached: the turn ends budget-exceeded', { why });
  await leg.journal.append('outcome', { status: 'budget-exceeded', error: why, output: { spent } });
  return undefined;
}
