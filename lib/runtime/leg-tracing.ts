import { type JournalEntry, legMarkerOf } from '../core/journal.ts';
import { parseTraceparent } from '../core/trace-context.ts';
import type { ModelResponse } from '../ports/model-client.ts';
import type { LegSpan, LegTraceStart, SpanHandle, TelemetryTracer } from '../telemetry/telemetry.ts';

const NOOP_HANDLE: SpanHandle = { setAttributes: () => {} };
export const NOOP_LEG_SPAN: LegSpan = { span: (_name, _attributes, fn) => fn(NOOP_HANDLE), end: () => {} };

/** Opens the leg's span when the tracer has leg spans; a no-op span otherwise. */
export function startLegSpan(
  tracer: TelemetryTracer,
  leg: Omit<LegTraceStart, 'previous'>,
  entries: readonly JournalEntry[],
): LegSpan {
  if (!tracer.startLeg) return NOOP_LEG_SPAN;
  return tracer.startLeg({ ...leg, previous: previousLeg(entries, leg.spanId) });
}

/** The leg before this one (`spanId`), from the traceparent its marker journaled. */
function previousLeg(
  entries: readonly JournalEntry[],
  spanId: string,
): { traceId: string; spanId: string } | undefined {
  for (let i = entries.length - 1; i >= 0; i--) {
    const marker = legMarkerOf(entries[i] as JournalEntry);
    if (!marker) continue;
    const context = parseTraceparent(marker.traceparent);
    if (context && context.spanId !== spanId) return context;
  }
  return undefined;
}

/** A model call in a GenAI `chat` span: model requested, token usage and finish reason. */
export function traceModelCall(
  leg: LegSpan,
  modelId: string,
  call: () => Promise<ModelResponse>,
): Promise<ModelResponse> {
  return leg.span(
    `chat ${modelId}`,
    { 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': modelId },
    async (span) => {
      const response = await call();
      span.setAttributes({
        'gen_ai.usage.input_tokens': response.usage.inputTokens,
        'gen_ai.usage.output_tokens': response.usage.outputTokens,
        'gen_ai.response.finish_reasons': [response.stopReason],
      });
      return response;
    },
  );
}

/** A tool call in a GenAI `execute_tool` span. */
export function traceToolCall<T>(leg: LegSpan, tool: string, callId: string, run: () => Promise<T>): Promise<T> {
  return leg.span(
    `execute_tool ${tool}`,
    {
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': tool,
      'gen_ai.tool.call.id': callId,
      'gen_ai.tool.type': 'function',
    },
    () => run(),
  );
}
