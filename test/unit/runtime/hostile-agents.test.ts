import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { checkedModelResponse } from '../../../lib/agent/checked-model-response.ts';
import { defineAgent } from '../../../lib/agent/define-agent.ts';
import { type AnyTool, defineTool } from '../../../lib/agent/define-tool.ts';
import { errorMessage, StepError } from '../../../lib/core/errors.ts';
import { deriveSessionId } from '../../../lib/core/ids.ts';
import type { ModelClient, ModelResponse } from '../../../lib/ports/model-client.ts';
import { acceptTicket } from '../../../lib/runtime/intake.ts';
import { drain, makeTestDeps, ticketBody } from '../../fixtures/runtime.ts';

const usage = { inputTokens: 1, outputTokens: 1 };

/** A model client as an author might write one: its first answer is `first`, then it reports what it saw. */
const rawModel = (first: unknown): ModelClient => ({
  id: 'raw-model',
  maxDurationMs: 1_000,
  async converse(request) {
    if (!request.messages.some((m) => m.role === 'assistant')) return first as ModelResponse;
    return { text: JSON.stringify(request.messages.at(-1)?.content), toolCalls: [], stopReason: 'end_turn', usage };
  },
});

const double = defineTool({
  name: 'double',
  description: 'Doubles n.',
  input: z.object({ n: z.number() }),
  effect: 'pure',
  run: async ({ n }) => n * 2,
});
const thrower = (value: unknown) =>
  defineTool({
    name: 'thrower',
    description: 'Throws.',
    input: z.object({}),
    effect: 'pure',
    run: async () => {
      throw value;
    },
  });

const agent = (name: string, first: unknown, tools: AnyTool[] = [double]) =>
  defineAgent({ name, instructions: 'x', tools, model: rawModel(first) });

async function runOne(name: string, first: unknown, tools: AnyTool[] = [double]) {
  const { deps, store } = makeTestDeps([agent(name, first, tools), agent('neighbour', { final: 1 })]);
  const key = { tenant: 'default', agent: name, id: deriveSessionId('default', name, 'T-1') };
  await acceptTicket(ticketBody(name, 'T-1', {}), undefined, deps);
  await drain(deps);
  return { outcome: (await store.getTurn(key, 'T-1'))?.outcome, journal: await store.readJournal(key) };
}

describe('an agent whose model or tools misbehave', () => {
  it.each([
    ['an empty response', {}, /model raw-model returned an invalid response: toolCalls: .*; stopReason: .*; usage: /],
    ['null', null, /model raw-model returned an invalid response/],
    [
      'a tool call whose id is not a string',
      { toolCalls: [{ id: 7, name: 'double', input: { n: 1 } }], stopReason: 'tool_use', usage },
      /invalid response: toolCalls\.0\.id: /,
    ],
    [
      'a tool call whose arguments JSON cannot carry',
      { toolCalls: [{ id: 'c1', name: 'double', input: { n: 10n } }], stopReason: 'tool_use', usage },
      /model raw-model returned an invalid response: toolCalls\.0\.input: not JSON: .*BigInt/,
    ],
    [
      'usage that is not token counts',
      { text: 'ok', toolCalls: [], stopReason: 'end_turn', usage: { inputTokens: Number.NaN, outputTokens: -1 } },
      /invalid response: usage\.inputTokens: .*; usage\.outputTokens: /,
    ],
  ])(
    'fails the turn, before journaling it, when the model returns %s, naming the model and the field',
    async (_, first, error) => {
      const { outcome, journal } = await runOne('bad-model', first);

      expect(outcome).toMatchObject({ status: 'failed', error: expect.stringMatching(error) });
      expect(journal.map((e) => e.kind)).not.toContain('model');
    },
  );

  it('hands a tool call without arguments to the tool as null: its schema refuses it and the model hears why', async () => {
    const { outcome } = await runOne('no-args', {
      toolCalls: [{ id: 'c1', name: 'double' }],
      stopReason: 'tool_use',
      usage,
    });

    expect(outcome?.status).toBe('completed');
    expect(outcome?.output).toMatch(/invalid input for double: .*expected object, received null/);
  });

  it('judges a call by the arguments the journal gives back: an undefined field is absent on every leg', async () => {
    // The tool's schema (and an approval rule) sees `{ w: 1 }`, as a recovered leg reads it, not
    // a `v` key the first leg alone had: the same call must not pass on one leg and fail on the next.
    const strict = defineTool({
      name: 'strict',
      description: 'Needs v.',
      input: z.object({ v: z.unknown() }),
      effect: 'pure',
      run: async (input) => input,
    });
    const { outcome } = await runOne(
      'undefined-field',
      { toolCalls: [{ id: 'c1', name: 'strict', input: { v: undefined, w: 1 } }], stopReason: 'tool_use', usage },
      [strict],
    );

    expect(outcome?.status).toBe('completed');
    expect(outcome?.output).toMatch(/invalid input for strict: v: /);
  });

  it.each([
    ['an object', { code: 42, retryable: true }, 'non-Error thrown: {\\"code\\":42,\\"retryable\\":true}'],
    ['undefined', undefined, 'non-Error thrown: undefined'],
    ['a string', 'quota exceeded', 'quota exceeded'],
  ])('reports a tool that throws %s (not an Error) to the model with what was thrown', async (_, thrown, said) => {
    const { outcome } = await runOne(
      'thrower',
      { toolCalls: [{ id: 'c1', name: 'thrower', input: {} }], stopReason: 'tool_use', usage },
      [thrower(thrown)],
    );

    expect(outcome?.status).toBe('completed');
    expect(outcome?.output).toContain(said);
  });
});

describe('a tool whose output is not JSON', () => {
  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  it.each([
    [
      'a BigInt',
      { n: 10n },
      'tool odd returned output that is not JSON: TypeError: Do not know how to serialize a BigInt',
    ],
    ['a cycle', cyclic, 'tool odd returned output that is not JSON: TypeError: Converting circular structure to JSON'],
  ])('tells the model the tool returned %s, naming the tool, and the turn goes on', async (_, output, said) => {
    const odd = defineTool({
      name: 'odd',
      description: 'x',
      input: z.object({}),
      effect: 'pure',
      run: async () => output,
    });
    const { outcome, journal } = await runOne(
      'odd-output',
      { toolCalls: [{ id: 'c1', name: 'odd', input: {} }], stopReason: 'tool_use', usage },
      [odd],
    );

    expect(outcome?.status).toBe('completed');
    expect(String(journal.find((e) => e.kind === 'tool')?.data.error)).toContain(said);
  });
});

describe('errorMessage', () => {
  it('describes a cyclic thrown object by its keys, and caps a huge one', () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;

    expect(errorMessage(cyclic)).toBe('non-Error thrown: {a, self} (not serialisable)');
    expect(errorMessage({ blob: 'x'.repeat(5_000) }).length).toBeLessThan(1_100);
  });
});

describe('checkedModelResponse', () => {
  it('passes a valid response through, treating a null text as none', () => {
    expect(
      checkedModelResponse(
        'm',
        {
          text: null,
          toolCalls: [{ id: 'a', name: 't', input: { x: 1 } }],
          stopReason: 'tool_use',
          usage,
        },
        4,
      ),
    ).toEqual({ toolCalls: [{ id: 'a', name: 't', input: { x: 1 } }], stopReason: 'tool_use', usage });
  });

  it('gives a call with no id, an empty id or a repeated id one of its own, derived from the entry seq', () => {
    const calls = [
      { name: 't', input: 1 },
      { id: '', name: 't', input: 2 },
      { id: 'a', name: 't', input: 3 },
      { id: 'a', name: 't', input: 4 },
    ];
    const checked = checkedModelResponse('m', { toolCalls: calls, stopReason: 'tool_use', usage }, 4);
    expect(checked.toolCalls.map((c) => c.id)).toEqual(['call_4_0', 'call_4_1', 'a', 'a_2']);
  });

  it('throws a StepError that is not retried', () => {
    let thrown: unknown;
    try {
      checkedModelResponse('m', { toolCalls: 'nope' }, 1);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(StepError);
    expect((thrown as StepError).retryable).toBe(false);
  });
});

describe('a tool or a model that never settles and ignores its abort signal', () => {
  const never = () => new Promise<never>(() => {});
  const hangs = (effect: 'pure' | 'once', maxDurationMs: number) =>
    defineTool({ name: 'hang', description: 'Never returns.', input: z.object({}), effect, maxDurationMs, run: never });
  const callHang = { toolCalls: [{ id: 'c1', name: 'hang', input: {} }], stopReason: 'tool_use', usage };

  it('hands off each leg a pure call holds past the budget, then fails the turn saying why', async () => {
    const name = 'hang-pure';
    const { deps, store } = makeTestDeps([agent(name, callHang, [hangs('pure', 2_000)])]);
    const key = { tenant: 'default', agent: name, id: deriveSessionId('default', name, 'T-1') };
    await acceptTicket(ticketBody(name, 'T-1', {}), undefined, deps);

    const outcomes = await drain(deps, { budgetMs: 5_000 });

    expect(outcomes.slice(0, 3)).toEqual(['yielded', 'yielded', 'yielded']);
    expect((await store.getTurn(key, 'T-1'))?.outcome).toMatchObject({
      status: 'failed',
      error: 'step cannot fit in the budget: a step that ran past the budget',
    });
  });

  it('leaves a once-only call that outruns the invocation to the next leg, which parks it for a human', async () => {
    const name = 'hang-once';
    const { deps, store } = makeTestDeps([agent(name, callHang, [hangs('once', 400)])]);
    const key = { tenant: 'default', agent: name, id: deriveSessionId('default', name, 'T-1') };
    await acceptTicket(ticketBody(name, 'T-1', {}), undefined, deps);

    const outcomes = await drain(deps, { budgetMs: 5_000 });

    expect(outcomes).toEqual(['yielded', 'parked']);
    const kinds = (await store.readJournal(key)).map((e) => e.kind);
    expect(kinds.filter((k) => k === 'intent')).toHaveLength(1);
    expect(kinds).not.toContain('tool');
  });

  it('hands off a leg whose model never answers, instead of renewing its lease forever', async () => {
    const hung: ModelClient = { id: 'hung-model', maxDurationMs: 1_000, converse: never };
    const { deps, store } = makeTestDeps([defineAgent({ name: 'hung', instructions: 'x', tools: [], model: hung })]);
    const key = { tenant: 'default', agent: 'hung', id: deriveSessionId('default', 'hung', 'T-1') };
    await acceptTicket(ticketBody('hung', 'T-1', {}), undefined, deps);

    const outcomes = await drain(deps, { budgetMs: 5_000, maxKicks: 1 });

    expect(outcomes).toEqual(['yielded']);
    expect((await store.readJournal(key)).map((e) => e.kind)).not.toContain('model');
  });
});
