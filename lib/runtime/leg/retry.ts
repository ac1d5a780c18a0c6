import type { AgentDefinition } from '../../agent/define-agent.ts';
import { resolvePolicy, retryDelayAfter } from '../../agent/retry-policy.ts';
import { BatonError, errorMessage, isInfrastructureError, PayloadTooLargeError } from '../../core/errors.ts';
import type { LegContext } from './leg-context.ts';
import { isInterruption } from './leg-signals.ts';

/**
 * Retry classification: what a step's error means for the turn. An interruption of the leg and
 * the infrastructure's trouble (a throttled store read, a 5xx) propagate, spending no retry
 * budget; a retryable error is journaled with its backoff per the retry policy; anything else
 * ends the turn failed.
 */

/** A retryable tool error, tagged with the tool it came from for the retry policy. */
export class StepSourceError extends BatonError {
  constructor(
    readonly source: string,
    cause: Error,
  ) {
    super(cause.message, { cause, retryable: true });
    this.name = cause.name;
  }
}

/** Runs a model or tools step; turns its errors into journal entries per the retry policy. */
export async function runStep(
  leg: LegContext,
  source: string,
  agent: AgentDefinition,
  run: () => Promise<void>,
): Promise<'ok' | 'waiting'> {
  try {
    await run();
    return 'ok';
  } catch (error) {
    // The leg's own interruptions and the infrastructure's failures are never the step's: they
    // go up to the leg, which stops, and the session is taken up again with the turn unharmed.
    if (isInterruption(error) || isInfrastructureError(error)) throw error;
    // An abort that reached us wrapped in another error is still the abort.
    leg.signals.throwIfAborted();
    if (error instanceof PayloadTooLargeError || !(error instanceof BatonError) || !error.retryable) {
      await leg.journal.append('outcome', { status: 'failed', error: `${source}: ${errorMessage(error)}` });
      return 'ok';
    }
    return recordRetryableError(leg, error instanceof StepSourceError ? error.source : source, error, agent);
  }
}

async function recordRetryableError(
  leg: LegContext,
  source: string,
  error: Error,
  agent: AgentDefinition,
): Promise<'ok' | 'waiting'> {
  const tool = agent.tools.find((t) => `tool:${t.name}` === source);
  const policy = resolvePolicy(agent.retry, tool?.retry);
  const attempt = leg.journal.view.failedAttempts + 1;
  if (attempt >= policy.attempts) {
    await leg.journal.append('error', { source, message: errorMessage(error), attempt });
    await leg.journal.append('outcome', {
      status: 'failed',
      error: `${source} failed ${attempt} times; last error: ${errorMessage(error)}`,
    });
    return 'ok';
  }
  const retryAt = leg.deps.clock.now() + retryDelayAfter(policy, attempt, leg.deps.random(), error);
  await leg.journal.append('error', { source, message: errorMessage(error), attempt, retryAt });
  leg.log.warn('step failed; retrying after backoff', { source, attempt, retryAt });
  return 'waiting';
}
