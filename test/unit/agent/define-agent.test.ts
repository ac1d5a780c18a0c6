import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { assertFitsBudget, defineAgent } from '../../../lib/agent/define-agent.ts';
import { defineTool, toolInputSchema } from '../../../lib/agent/define-tool.ts';
import { scriptedModel } from '../../../lib/agent/scripted-model.ts';

const model = scriptedModel({ maxDurationMs: 2_000, script: () => ({ final: 'ok' }) });
const tool = (name: string, effect: 'pure' | 'once', maxDurationMs: number) =>
  defineTool({ name, description: name, input: z.object({}), effect, maxDurationMs, run: async () => null });
const limits = { functionTimeoutMs: 10_000, reserveMs: 2_000, leaseTtlMs: 5_000 };

describe('agent definitions', () => {
  it('accept steps that fit the invocation and once-only calls the lease outlives', () => {
    const agent = defineAgent({
      name: 'fits',
      instructions: '',
      model,
      tools: [tool('a', 'pure', 7_000), tool('b', 'once', 3_500)],
    });
    expect(() => assertFitsBudget(agent, limits)).not.toThrow();
  });

  it('refuse a tool that can never fit in one invocation, naming it', () => {
    const agent = defineAgent({ name: 'too-slow', instructions: '', model, tools: [tool('crawl', 'pure', 7_001)] });
    expect(() => assertFitsBudget(agent, limits)).toThrow(
      /tool crawl may take 7001 ms, which cannot fit in a 10000 ms invocation/,
    );
  });

  it('refuse a once-only tool that the lease cannot outlive', () => {
    const agent = defineAgent({ name: 'risky', instructions: '', model, tools: [tool('pay', 'once', 4_500)] });
    expect(() => assertFitsBudget(agent, limits)).toThrow(/once-only tool pay .* 5000 ms lease cannot outlive/);
  });

  it('refuse duplicate tool names and malformed agent names', () => {
    expect(() =>
      defineAgent({ name: 'dup', instructions: '', model, tools: [tool('a', 'pure', 1), tool('a', 'pure', 1)] }),
    ).toThrow(/defined twice/);
    expect(() => defineAgent({ name: 'has space', instructions: '', model })).toThrow(/agent name/);
  });

  it('builds a tool’s input JSON Schema once, not at every model call', () => {
    // Arrange
    const lookup = defineTool({
      name: 'lookup',
      description: 'Looks up.',
      input: z.object({ id: z.string() }),
      effect: 'pure',
      maxDurationMs: 1,
      run: async () => null,
    });

    // Act
    const first = toolInputSchema(lookup);
    const second = toolInputSchema(lookup);

    // Assert
    expect(first).toMatchObject({ type: 'object', properties: { id: { type: 'string' } } });
    expect(second).toBe(first);
  });
});

// An agents module runs with its types stripped, so these typos reach defineAgent and defineTool.
describe('definitions with a typo', () => {
  // biome-ignore lint/suspicious/noExplicitAny: the point is a definition the compiler never saw
  const untyped = (options: Record<string, unknown>): any => options;
  const run = async () => null;

  it('refuse an unknown agent option, naming it and the option it is closest to', () => {
    expect(() => defineAgent(untyped({ name: 'typo', instructions: '', modle: model }))).toThrow(
      /agent typo: unknown option "modle" \(did you mean "model"\?\)/,
    );
  });

  it('refuse an agent without a model client, instead of crashing in its first leg', () => {
    expect(() => defineAgent(untyped({ name: 'no-model', instructions: '' }))).toThrow(
      /agent no-model: model must be a model client .* got none/,
    );
    expect(() => defineAgent(untyped({ name: 'no-model', instructions: '', model: 'claude' }))).toThrow(
      /agent no-model: model must be a model client .* got string/,
    );
  });

  it('refuse tools that are not tools, input schemas that are not schemas and instructions that are not text', () => {
    expect(() => defineAgent(untyped({ name: 'a', instructions: '', model, tools: [{ name: 'x' }] }))).toThrow(
      /agent a: tools\[0\] is not a tool/,
    );
    expect(() => defineAgent(untyped({ name: 'a', instructions: '', model, input: { orderId: 'string' } }))).toThrow(
      /agent a: input must be a zod schema/,
    );
    expect(() => defineAgent(untyped({ name: 'a', model }))).toThrow(/agent a: instructions must be a string/);
  });

  it('refuse a misspelt tool effect, which would run a once-only call without its watermark', () => {
    const tool = untyped({ name: 'pay', description: '', input: z.object({}), effect: 'onse', run });
    expect(() => defineTool(tool)).toThrow(
      /tool pay: effect must be one of 'pure', 'idempotent', 'once', got "onse" \(did you mean 'once'\?\)/,
    );
  });

  it('refuse an unknown tool option, a tool without run and an input that is not a schema', () => {
    const base = { name: 'pay', description: '', input: z.object({}), effect: 'once', run };
    expect(() => defineTool(untyped({ ...base, maxDurationMS: 5_000 }))).toThrow(
      /tool pay: unknown option "maxDurationMS" \(did you mean "maxDurationMs"\?\)/,
    );
    expect(() => defineTool(untyped({ ...base, run: undefined }))).toThrow(/tool pay: run must be a function/);
    expect(() => defineTool(untyped({ ...base, input: { type: 'object' } }))).toThrow(
      /tool pay: input must be a zod schema/,
    );
  });

  it('refuse a tool input that is not an object: models take a tool’s arguments as one JSON object', () => {
    const base = { name: 'echo', description: '', effect: 'pure', run } as const;
    const inputs: z.ZodType[] = [
      z.string(),
      z.array(z.number()),
      z.enum(['a', 'b']),
      z.string().optional(),
      z.string().transform((s) => s.length),
    ];
    for (const input of inputs)
      expect(() => defineTool({ ...base, input })).toThrow(/tool echo: input must describe an object/);
    // Objects, also wrapped, refined or in a union of objects, are what models take.
    const objects: z.ZodType[] = [
      z.object({ a: z.string() }),
      z.object({ a: z.string() }).optional(),
      z.object({ a: z.string() }).refine(() => true),
      z.union([z.object({ a: z.string() }), z.object({ b: z.number() })]),
      z.record(z.string(), z.number()),
      // A preprocess is judged by the schema it feeds, as its JSON Schema is.
      z.preprocess((v) => v, z.object({ a: z.string() })),
      z.object({ a: z.string() }).transform((o) => o.a),
    ];
    for (const input of objects) expect(() => defineTool({ ...base, input })).not.toThrow();
  });
});
