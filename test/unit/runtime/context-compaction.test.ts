import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { estimateTokens } from '../../../lib/agent/compaction.ts';
import { defineAgent } from '../../../lib/agent/define-agent.ts';
import { defineTool } from '../../../lib/agent/define-tool.ts';
import { scriptedModel } from '../../../lib/agent/scripted-model.ts';
import { buildTranscript } from '../../../lib/agent/transcript.ts';
import { foldJournal } from '../../../lib/core/fold.ts';
import { deriveSessionId, type SessionKey } from '../../../lib/core/ids.ts';
import type { ChatMessage, ModelRequest } from '../../../lib/ports/model-client.ts';
import { FailpointCrash } from '../../../lib/runtime/failpoints.ts';
import { acceptTicket } from '../../../lib/runtime/intake.ts';
import { runKick } from '../../../lib/runtime/step-runner.ts';
import { acceptTurn } from '../../../lib/runtime/turn-intake.ts';
import { drain, invocation, makeTestDeps, ticketBody } from '../../fixtures/runtime.ts';

const WINDOW_TOKENS = 8_000;
const TURNS = 300;

const lookupOrder = defineTool({
  name: 'lookupOrder',
  description: 'Reads an order with its items and shipping history.',
  input: z.object({ orderId: z.string() }),
  effect: 'pure',
  maxDurationMs: 1_000,
  run: async ({ orderId }) => ({
    orderId,
    status: 'in transit',
    items: [
      { sku: 'SKU-1', name: 'kettle', cents: 2_999 },
      { sku: 'SKU-2', name: 'toaster', cents: 4_599 },
    ],
    history: ['ordered', 'packed', 'handed to the carrier', 'arrived at the regional hub', 'out for delivery'],
  }),
});

/** The customer's question of a turn and the order it names, read from the latest user text. */
function currentQuestion(messages: readonly ChatMessage[]): { orderId: string; text: string } {
  for (const message of [...messages].reverse()) {
    if (message.role !== 'user') continue;
    for (const content of [...message.content].reverse()) {
      if (content.type !== 'text') continue;
      const match = /order (O-\d+)/.exec(content.text);
      if (match) return { orderId: match[1] as string, text: content.text };
    }
  }
  throw new Error('no question in the transcript');
}

/** Looks the order up once per turn, then answers at some length, as a support agent would. */
function supportScript(messages: readonly ChatMessage[]) {
  const { orderId } = currentQuestion(messages);
  const callId = `lookup-${orderId}`;
  const answered = messages.some(
    (m) => m.role === 'user' && m.content.some((c) => c.type === 'toolResult' && c.toolCallId === callId),
  );
  if (!answered) return { toolCalls: [{ id: callId, name: 'lookupOrder', input: { orderId } }] };
  return {
    final:
      `Order ${orderId} is in transit: it left the regional hub this morning and is out for delivery. ` +
      'It holds a kettle and a toaster. If it has not arrived by tomorrow evening, reply here and I will open a ' +
      'claim with the carrier and send a replacement at no cost to you.',
  };
}

/** Keeps the order ids the conversation named, newest last: a bounded summary, as a real one would be. */
function summarize(request: ModelRequest) {
  const text = JSON.stringify(request.messages);
  const ids = [...new Set(text.match(/O-\d+/g) ?? [])].slice(-20);
  return { final: `The customer asked about orders ${ids.join(', ')}; each was looked up and answered.` };
}

describe('context that always fits', () => {
  it('keeps a 300-turn support conversation within an 8k window, with flat input per call once compaction starts', async () => {
    // Arrange
    const sent: { tokens: number }[] = [];
    const summarizerInputs: number[] = [];
    const agent = defineAgent({
      name: 'desk',
      instructions: 'You are a support agent. Look orders up before answering.',
      conversation: true,
      contextWindowTokens: WINDOW_TOKENS,
      tools: [lookupOrder],
      limits: { maxSteps: 10 },
      model: scriptedModel({
        script: (messages, request) => {
          sent.push({ tokens: estimateTokens(request) });
          return supportScript(messages);
        },
      }),
      compaction: {
        summarizer: scriptedModel({
          id: 'summarizer',
          script: (_, request) => {
            summarizerInputs.push(estimateTokens(request));
            return summarize(request);
          },
        }),
      },
    });
    const test = makeTestDeps([agent]);
    const key: SessionKey = { tenant: 'default', agent: 'desk', id: deriveSessionId('default', 'desk', 'c1') };
    const question = (n: number) => `Hello again, where is my order O-${n}? I ordered it a while ago.`;

    // Act
    await acceptTicket(ticketBody('desk', 'c1', question(1)), undefined, test.deps);
    await drain(test.deps);
    for (let n = 2; n <= TURNS; n++) {
      await acceptTurn({ key, turnId: `t${n}`, ticketId: `t${n}`, input: question(n), sweepGraceMs: 1_500 }, test.deps);
      await drain(test.deps);
    }

    // Assert: every turn answered, and no request ever passed the window (by the conservative count).
    expect(test.results.bodies).toHaveLength(TURNS);
    expect(test.results.bodies.every((r) => r.status === 'completed')).toBe(true);
    expect(sent).toHaveLength(2 * TURNS);
    expect(Math.max(...sent.map((s) => s.tokens))).toBeLessThanOrEqual(WINDOW_TOKENS);
    expect(Math.max(...summarizerInputs)).toBeLessThanOrEqual(WINDOW_TOKENS);

    // Flat: once compaction started, the largest request of the last third is no larger than that of the first.
    const entries = await test.store.readJournal(key);
    const compactions = entries.filter((e) => e.kind === 'compaction');
    expect(compactions.length).toBeGreaterThan(5);
    // The calls before the first compaction grew with the transcript; count from the one after it.
    const firstCompaction = compactions[0]?.seq ?? 0;
    const started = entries.filter((e) => e.kind === 'model' && e.seq < firstCompaction).length;
    expect(started).toBeGreaterThan(10);
    const after = sent.slice(started);
    const third = Math.floor(after.length / 3);
    const firstThird = Math.max(...after.slice(0, third).map((s) => s.tokens));
    const lastThird = Math.max(...after.slice(-third).map((s) => s.tokens));
    expect(lastThird).toBeLessThanOrEqual(firstThird);

    // The originals stay in the journal; the fold counts the summarizer's calls.
    expect(entries.filter((e) => e.kind === 'input')).toHaveLength(TURNS);
    const view = foldJournal(entries);
    expect(view.modelCalls).toBe(2 * TURNS + compactions.length);

    // Every call in the transcript the model sees has its result, and every result its call.
    const transcript = buildTranscript(entries);
    const uses = transcript.flatMap((m) => m.content.flatMap((c) => (c.type === 'toolUse' ? [c.toolCallId] : [])));
    const results = transcript.flatMap((m) =>
      m.content.flatMap((c) => (c.type === 'toolResult' ? [c.toolCallId] : [])),
    );
    expect(results).toEqual(uses);
    expect(transcript[0]?.role).toBe('user');
  }, 120_000);
});

describe('compaction as a step', () => {
  it('survives a kill during the summarizer call, then runs once: its summary is journaled once and never asked for again', async () => {
    // Arrange: a window so small that the second turn's call passes the threshold.
    let summarizerCalls = 0;
    let crashed = false;
    const agent = defineAgent({
      name: 'desk',
      instructions: 'Answer.',
      conversation: true,
      contextWindowTokens: 200,
      compaction: { thresholdRatio: 0.5, keepRatio: 0.2 },
      model: scriptedModel({
        script: (messages, request) => {
          if (request.system !== 'Answer.') {
            summarizerCalls++;
            return { final: 'the customer said hello' };
          }
          return { final: `answer ${messages.length}: ${'words '.repeat(20)}` };
        },
      }),
    });
    const crash = new FailpointCrash('mid-step');
    const test = makeTestDeps([agent], {
      failpoint: async (name) => {
        if (name === 'mid-step' && summarizerCalls === 1 && !crashed) {
          crashed = true;
          throw crash;
        }
      },
    });
    const key: SessionKey = { tenant: 'default', agent: 'desk', id: deriveSessionId('default', 'desk', 'k1') };
    await acceptTicket(ticketBody('desk', 'k1', 'hello, I have a question about my order'), undefined, test.deps);
    await drain(test.deps);

    // Act: the second turn's leg dies in the summarizer call; a recovery takes the session up.
    await acceptTurn({ key, turnId: 't2', ticketId: 't2', input: 'and another one', sweepGraceMs: 1_500 }, test.deps);
    await expect(drain(test.deps)).rejects.toBe(crash);
    const afterCrash = await test.store.readJournal(key);
    test.clock.advance(test.deps.config.leaseTtlMs + 100);
    await runKick({ v: 1, session: key, reason: 'recovery' }, invocation(60_000, test.clock), test.deps);
    await drain(test.deps);

    // Assert
    const entries = await test.store.readJournal(key);
    expect(afterCrash.some((e) => e.kind === 'compaction')).toBe(false);
    expect(entries.filter((e) => e.kind === 'compaction')).toHaveLength(1);
    expect(summarizerCalls).toBe(2);
    expect(test.results.bodies.map((r) => r.status)).toEqual(['completed', 'completed']);
    const fold = foldJournal(entries);
    expect(fold.usage.inputTokens).toBeGreaterThan(0);
    expect(fold.modelCalls).toBe(3);
  });
});

describe("the model's own token count", () => {
  it('is asked only when the estimate passes the threshold, and its lower count spares a needless compaction', async () => {
    // Arrange: the estimate passes the threshold by the second turn; the provider counts far less.
    const windowTokens = 200;
    const threshold = 0.5 * windowTokens;
    const counted: number[] = [];
    const model = scriptedModel({
      script: (messages) => ({ final: `answer ${messages.length}: ${'words '.repeat(20)}` }),
    });
    const agent = defineAgent({
      name: 'desk',
      instructions: 'Answer.',
      conversation: true,
      contextWindowTokens: windowTokens,
      compaction: { thresholdRatio: 0.5, keepRatio: 0.2 },
      model: {
        ...model,
        countTokens: async (request) => {
          counted.push(estimateTokens(request));
          return 10;
        },
      },
    });
    const test = makeTestDeps([agent]);
    const key: SessionKey = { tenant: 'default', agent: 'desk', id: deriveSessionId('default', 'desk', 'k2') };

    // Act
    await acceptTicket(ticketBody('desk', 'k2', 'hello'), undefined, test.deps);
    await drain(test.deps);
    for (const turn of ['t2', 't3', 't4']) {
      await acceptTurn(
        { key, turnId: turn, ticketId: turn, input: `question ${turn}`, sweepGraceMs: 1_500 },
        test.deps,
      );
      await drain(test.deps);
    }

    // Assert: asked for the large requests only, never for the first; and nothing was compacted.
    const entries = await test.store.readJournal(key);
    expect(counted.length).toBeGreaterThan(0);
    expect(counted.length).toBeLessThan(4);
    expect(counted.every((estimate) => estimate > threshold)).toBe(true);
    expect(entries.some((e) => e.kind === 'compaction')).toBe(false);
    expect(test.results.bodies.map((r) => r.status)).toEqual(['completed', 'completed', 'completed', 'completed']);
  });
});
