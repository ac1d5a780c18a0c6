import { checkedModelResponse } from '../../agent/checked-model-response.ts';
import type { AgentDefinition } from '../../agent/define-agent.ts';
import { toolInputSchema } from '../../agent/define-tool.ts';
import { taskToolSpecs } from '../../agent/task-tools.ts';
import { TranscriptBuilder } from '../../agent/transcript.ts';
import type { JournalEntry } from '../../core/journal.ts';
import { costOf } from '../../core/spend.ts';
import { formatTaskBlock, taskLedger } from '../../core/tasks.ts';
import type { ChatMessage, ModelRequest, ModelResponse } from '../../ports/model-client.ts';
import { traceModelCall } from '../leg-tracing.ts';
import { type LiveTextWriter, liveTextWriter } from '../live-text-writer.ts';
import { readTaskLines } from '../tasks/read-tasks.ts';
import { untilAbandoned } from './abandon.ts';
import { compactionDue, compactionStep } from './compaction-step.ts';
import type { LegContext } from './leg-context.ts';
import { fitsInBudget, type LegExit, WAIT_RETRY, yieldLeg } from './leg-exit.ts';
import { modelRateStep } from './model-rate-step.ts';
import { runStep } from './retry.ts';
import { countUsage } from './usage-metrics.ts';

/**
 * The model step: one call with the transcript (from the latest compaction on), journaled as a
 * `model` entry with its usage and cost. A request that would pass the context window's
 * threshold is compacted first, as a step of its own; the next pass sends the shorter transcript.
 */
export async function modelStep(leg: LegContext, agent: AgentDefinition): Promise<LegExit | undefined> {
  const request = await modelRequest(leg, agent);
  const compaction = await compactionDue(leg, agent, request);
  if (compaction) return compactionStep(leg, agent, compaction);
  if (!fitsInBudget(leg, agent.model.maxDurationMs)) return yieldLeg(`model ${agent.model.id}`);
  // The tenant's rate, last: a token is spent only on a call that goes out now.
  const throttled = await modelRateStep(leg, agent);
  if (throttled) return throttled;
  const outcome = await runStep(leg, 'model', agent, () => callModel(leg, agent, request));
  return outcome === 'waiting' ? WAIT_RETRY : undefined;
}

/**
 * Each leg's transcript, kept between its model steps: keyed by the journal's entries, which a
 * leg only appends to (a reload is a new array, and a new transcript).
 */
const transcripts = new WeakMap<readonly JournalEntry[], TranscriptBuilder>();

function transcriptOf(entries: readonly JournalEntry[]): ChatMessage[] {
  let builder = transcripts.get(entries);
  if (!builder) {
    builder = new TranscriptBuilder();
    transcripts.set(entries, builder);
  }
  return builder.extend(entries);
}

async function modelRequest(leg: LegContext, agent: AgentDefinition): Promise<ModelRequest> {
  const tools = agent.tools.map((t) => ({ name: t.name, description: t.description, inputSchema: toolInputSchema(t) }));
  return {
    system: agent.instructions,
    messages: await withTaskStatus(leg, transcriptOf(leg.journal.entries)),
    tools: agent.delegates ? [...tools, ...taskToolSpecs(agent.delegates)] : tools,
  };
}

async function callModel(leg: LegContext, agent: AgentDefinition, request: ModelRequest): Promise<void> {
  const { deps } = leg;
  const started = deps.clock.now();
  const stream = streamSink(leg);
  // The seq the model entry takes: nothing else is journaled before it.
  const seq = leg.journal.view.lastSeq + 1;
  let response: ModelResponse;
  try {
    const pending = traceModelCall(leg.span, agent.model.id, async () =>
      checkedModelResponse(agent.model.id, await agent.model.converse(request, leg.signals.stepSignal, stream), seq),
    );
    await deps.failpoint('mid-step');
    // A model client that ignores the leg's abort is left behind: the leg still hands off.
    response = await untilAbandoned(pending, leg.signals.stepSignal, deps.clock);
  } finally {
    // Before the entry is journaled: no partial is written after its response is whole.
    await stream?.close();
  }
  leg.signals.throwIfAborted();
  deps.telemetry.metrics.duration('StepDuration', deps.clock.now() - started);
  const costUsd = costOf(response.usage, agent.prices?.[agent.model.id]);
  countUsage(deps.telemetry.metrics, leg.key.tenant, response.usage, costUsd);
  await leg.journal.append('model', {
    text: response.text,
    toolCalls: [...response.toolCalls],
    stopReason: response.stopReason,
    usage: response.usage,
    ...(costUsd === undefined ? {} : { costUsd }),
  });
}

/**
 * Where a streaming model's partial text goes: coalesced chunks in the live text store, keyed by
 * the seq the model entry will take. None without a store; a model that does not stream never
 * writes to it, so streaming costs nothing unless the agent's model streams.
 */
function streamSink(leg: LegContext): LiveTextWriter | undefined {
  const { deps } = leg;
  const turnId = leg.journal.view.turnId;
  if (!deps.live || turnId === undefined) return undefined;
  return liveTextWriter({
    store: deps.live,
    clock: deps.clock,
    session: leg.key,
    seq: leg.journal.view.lastSeq + 1,
    turnId,
    policy: deps.config.liveText,
    onWrite: ({ ok, error }) => {
      deps.telemetry.metrics.count(ok ? 'LiveTextWrites' : 'LiveTextWriteFailures');
      if (!ok) leg.log.debug('live text write failed (the journal is unaffected)', { error: String(error) });
    },
  });
}

/**
 * A delegating session's model sees its tasks' statuses, read from the store just now, as a user
 * text after the transcript: never journaled, so it is always current, whichever worker asks.
 */
async function withTaskStatus(leg: LegContext, messages: ChatMessage[]): Promise<ChatMessage[]> {
  if (!leg.agent?.delegates) return messages;
  const ledger = taskLedger(leg.journal.entries);
  if (ledger.tasks.length === 0) return messages;
  const lines = await readTaskLines(leg.deps.store, leg.key, ledger.tasks);
  const block = { type: 'text' as const, text: formatTaskBlock(lines) };
  const last = messages.at(-1);
  if (last?.role === 'user') return [...messages.slice(0, -1), { role: 'user', content: [...last.content, block] }];
  return [...messages, { role: 'user', content: [block] }];
}
