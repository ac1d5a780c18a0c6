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
