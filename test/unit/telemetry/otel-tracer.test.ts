import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../lib/adapters/memory/manual-clock.ts';
import type { MemoryWorkQueue } from '../../../lib/adapters/memory/memory-queues.ts';
import { deriveSessionId } from '../../../lib/core/ids.ts';
import { type JournalEntry, legMarkerOf } from '../../../lib/core/journal.ts';
import { parseTraceparent } from '../../../lib/core/trace-context.ts';
import { systemClock } from '../../../lib/ports/clock.ts';
import { noFailpoints } from '../../../lib/runtime/failpoints.ts';
import { acceptTicket } from '../../../lib/runtime/intake.ts';
import { runKick } from '../../../lib/runtime/step-runner.ts';
import { createOtelTracer } from '../../../lib/telemetry/otel-tracer.ts';
import { drain, invocation, lookupAgent, makeTestDeps, ticketBody } from '../../fixtures/runtime.ts';

const legSpanIds = (journal: JournalEntry[]) =>
  journal.flatMap((e) => {
    const marker = legMarkerOf(e);
    return marker ? [parseTraceparent(marker.traceparent)!.spanId] : [];
  });

async function until(what: string, condition: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('the OpenTelemetry tracer', () => {
  it('traces a multi-leg turn that survives a kill as one trace, each leg linked to the one before', async () => {
    const exporter = new InMemorySpanExporter();
    const tracer = createOtelTracer({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
    // Manual time for reading (the lease expires when the test says so), real timers and sleeps:
    // the killed leg's heartbeat (every TTL/3 of real time) stays quiet while the clock jumps.
    const manual = new ManualClock();
    const clock = {
      now: () => manual.now(),
      sleep: systemClock.sleep,
      setTimer: systemClock.setTimer,
      advance: (ms: number) => manual.advance(ms),
    };
    const base = makeTestDeps([lookupAgent({ modelLatencyMs: 400 })], {
      clock,
      config: { leaseTtlMs: 30_000, reserveMs: 200, retentionDays: 1, sweepGraceMs: 30_000 },
    });
    const deps = { ...base.deps, telemetry: { ...base.telemetry, tracer } };
    await acceptTicket(ticketBody('lookup-agent', 'O-1', { ids: ['a', 'b', 'c', 'd', 'e', 'f'] }), undefined, deps);
    const key = { tenant: 'default', agent: 'lookup-agent', id: deriveSessionId('default', 'lookup-agent', 'O-1') };

    // The first leg is killed after its first tool result (input, model, tool): it hangs there for
    // ever, never ending its span.
    let appends = 0;
    const killed = {
      ...deps,
      failpoint: (name: string) =>
        name === 'after-append' && ++appends === 3 ? new Promise<void>(() => {}) : Promise.resolve(),
    };
    const [first] = (deps.workQueue as MemoryWorkQueue).receive();
    void runKick(first!.body, invocation(60_000, clock), killed);
    await until('the first leg to journal a tool result', async () =>
      (await base.store.readJournal(key)).some((e) => e.kind === 'tool'),
    );

    // Its lease expires; a recovery takes over and the turn continues over further legs.
    clock.advance(31_000);
    const recovered = { ...deps, failpoint: noFailpoints };
    await runKick({ v: 1, session: key, reason: 'recovery' }, invocation(1_800, clock), recovered);
    await drain(recovered, { budgetMs: 1_800 });
    expect(base.results.bodies).toEqual([expect.objectContaining({ status: 'completed', output: 'found 6' })]);

    const journal = await base.store.readJournal(key);
    const legs = legSpanIds(journal);
    expect(legs.length).toBeGreaterThanOrEqual(3);
    await tracer.forceFlush();
    const spans = exporter.getFinishedSpans();
    const traceId = (await base.store.getSession(key))!.traceId;
    expect(new Set(spans.map((s) => s.spanContext().traceId))).toEqual(new Set([traceId]));

    // Every leg but the killed one exported its span, under the span id its marker journaled.
    const legSpans = spans.filter((s) => s.name === 'invoke_agent lookup-agent');
    expect(legSpans.map((s) => s.spanContext().spanId).sort()).toEqual(legs.slice(1).sort());
    const legSpan = (spanId: string) => legSpans.find((s) => s.spanContext().spanId === spanId)!;
    for (let i = 1; i < legs.length; i++) {
      const span = legSpan(legs[i]!);
      expect(span.parentSpanContext?.spanId).toBe(legs[i - 1]);
      expect(span.links.map((l) => l.context.spanId)).toEqual([legs[i - 1]]);
    }
    expect(legSpan(legs[1]!).attributes).toMatchObject({
      'baton.leg.reason': 'recovery',
      'gen_ai.agent.name': 'lookup-agent',
    });
    expect(legSpan(legs.at(-1)!).attributes['baton.leg.outcome']).toBe('finished');

    // A GenAI span per model call and per tool call, the killed leg's included.
    const models = journal.filter((e) => e.kind === 'model');
    // A call the budget cut short has a span too, without usage; every answered call has usage.
    const chats = spans.filter(
      (s) => s.name === 'chat scripted' && s.attributes['gen_ai.usage.input_tokens'] !== undefined,
    );
    expect(chats).toHaveLength(models.length);
    for (const chat of chats)
      expect(chat.attributes).toMatchObject({
        'gen_ai.operation.name': 'chat',
        'gen_ai.request.model': 'scripted',
        'gen_ai.usage.input_tokens': expect.any(Number),
        'gen_ai.usage.output_tokens': expect.any(Number),
        'gen_ai.response.finish_reasons': [expect.stringMatching(/^(tool_use|end_turn)$/)],
      });
    const tools: ReadableSpan[] = spans.filter((s) => s.name === 'execute_tool lookup');
    expect(tools).toHaveLength(journal.filter((e) => e.kind === 'tool').length);
    expect(tools[0]!.attributes).toMatchObject({ 'gen_ai.tool.name': 'lookup', 'gen_ai.tool.call.id': 'a' });
    // Inside a leg, model and tool spans are children of that leg's span.
    for (const child of [...chats, ...tools]) expect(legs).toContain(child.parentSpanContext?.spanId);
    await tracer.shutdown();
  });

  it('records a failed tool call as an errored span', async () => {
    const exporter = new InMemorySpanExporter();
    const tracer = createOtelTracer({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
    const leg = tracer.startLeg!({
      session: 's',
      tenant: 't',
      agent: 'a',
      traceId: '0af7651916cd43dd8448eb211c80319c',
      spanId: 'b7ad6b7169203331',
      sampled: true,
      epoch: 1,
      reason: 'first',
    });
    await expect(
      leg.span('execute_tool x', { 'gen_ai.tool.name': 'x' }, async () => {
        throw new Error('downstream 503');
      }),
    ).rejects.toThrow('downstream 503');
    leg.end('yielded');
    await tracer.forceFlush();
    const [tool, legSpan] = exporter.getFinishedSpans();
    expect(tool).toMatchObject({ status: { code: 2, message: 'Error: downstream 503' } });
    expect(tool!.attributes['error.type']).toBe('Error');
    // The first leg is the root of its turn's trace, under the ids Baton chose.
    expect(legSpan!.spanContext()).toMatchObject({
      traceId: '0af7651916cd43dd8448eb211c80319c',
      spanId: 'b7ad6b7169203331',
    });
    expect(legSpan!.parentSpanContext).toBeUndefined();
    await tracer.shutdown();
  });
});
