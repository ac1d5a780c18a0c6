import {
  boundedSummary,
  type CompactionRange,
  type ContextWindow,
  chooseCompactionRange,
  contextWindow,
  estimateTokens,
  summarizerRequest,
} from '../../agent/compaction.ts';
import { type AgentDefinition, contextWindowOf, summarizerOf } from '../../agent/define-agent.ts';
import { latestCompaction } from '../../agent/transcript.ts';
import { errorMessage, StepError } from '../../core/errors.ts';
import { costOf } from '../../core/spend.ts';
import type { ModelRequest } from '../../ports/model-client.ts';
import { untilAbandoned } from './abandon.ts';
import type { LegContext } from './leg-context.ts';
import { fitsInBudget, type LegExit, WAIT_RETRY, yieldLeg } from './leg-exit.ts';
import { runStep } from './retry.ts';
import { countUsage } from './usage-metrics.ts';

/** A compaction the next model call needs first: the range to condense and the window it must fit. */
export interface DueCompaction {
  readonly range: CompactionRange;
  readonly window: ContextWindow;
  readonly inputTokens: number;
}

/**
 * Whether the request about to be sent passes the agent's threshold (by the model's own token
 * count when its adapter offers one, else the conservative estimate) and there is an older part
 * of the transcript to condense. An agent without a context window never compacts.
 */
export async function compactionDue(
  leg: LegContext,
  agent: AgentDefinition,
  request: ModelRequest,
): Promise<DueCompaction | undefined> {
  const window = contextWindow(contextWindowOf(agent), agent.compaction);
  if (!window) return undefined;
  const inputTokens = await countInputTokens(leg, agent, request, window.thresholdTokens);
  if (inputTokens <= window.thresholdTokens) return undefined;
  const { entries, view } = leg.journal;
  const range = chooseCompactionRange(entries, view.compactedThrough, window.keepTokens);
  if (!range) {
    leg.log.warn('transcript passes the compaction threshold with nothing left to condense', {
      inputTokens,
      thresholdTokens: window.thresholdTokens,
    });
    return undefined;
  }
  return { range, window, inputTokens };
}

/**
 * The request's input tokens as far as the threshold needs them: the estimate over-counts, so a
 * request it puts under the threshold is under it, and the provider is asked (one more request)
 * only when the estimate says the request may be over.
 */
async function countInputTokens(
  leg: LegContext,
  agent: AgentDefinition,
  request: ModelRequest,
  thresholdTokens: number,
): Promise<number> {
  const estimate = estimateTokens(request);
  if (!agent.model.countTokens || estimate <= thresholdTokens) return estimate;
  try {
    return await agent.model.countTokens(request, leg.signals.stepSignal);
  } catch (error) {
    leg.signals.throwIfAborted();
    leg.log.warn('model token count failed; using the estimate', { error: errorMessage(error) });
    return estimate;
  }
}

/**
 * The compaction step: the summarizer condenses the range (with the previous summary), and a
 * `compaction` entry records the summary, the range and what it cost. It is a step like a model
 * call: it fits the budget first, a leg killed before its entry lands runs it again (the summary
 * is only ever journaled once), and its errors follow the agent's retry policy.
 */
export async function compactionStep(
  leg: LegContext,
  agent: AgentDefinition,
  due: DueCompaction,
): Promise<LegExit | undefined> {
  const summarizer = summarizerOf(agent);
  if (!fitsInBudget(leg, summarizer.maxDurationMs)) return yieldLeg(`summarizer ${summarizer.id}`);
  const outcome = await runStep(leg, 'compaction', agent, async () => {
    const { entries } = leg.journal;
    const request = summarizerRequest(
      entries,
      due.range,
      latestCompaction(entries)?.data.summary,
      agent.compaction?.instructions,
    );
    const signal = leg.signals.stepSignal;
    const pending = summarizer.converse(request, signal);
    await leg.deps.failpoint('mid-step');
    const response = await untilAbandoned(pending, signal, leg.deps.clock);
    leg.signals.throwIfAborted();
    const text = response.text?.trim() ?? '';
    if (text === '') throw new StepError(`summarizer ${summarizer.id} returned no summary`, { retryable: true });
    const costUsd = costOf(response.usage, agent.prices?.[summarizer.id]);
    leg.deps.telemetry.metrics.count('Compactions');
    countUsage(leg.deps.telemetry.metrics, leg.key.tenant, response.usage, costUsd);
    await leg.journal.append('compaction', {
      summary: boundedSummary(text, due.window.maxSummaryChars),
      ...due.range,
      model: summarizer.id,
      usage: response.usage,
      ...(costUsd === undefined ? {} : { costUsd }),
    });
    leg.log.info('transcript compacted', { ...due.range, inputTokens: due.inputTokens });
  });
  return outcome === 'waiting' ? WAIT_RETRY : undefined;
}
