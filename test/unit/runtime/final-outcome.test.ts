import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent } from '../../../lib/agent/define-agent.ts';
import { scriptedModel } from '../../../lib/agent/scripted-model.ts';
import { finalOutcome } from '../../../lib/runtime/leg/turn-step.ts';

const typed = defineAgent({
  name: 'typed',
  instructions: 'Answer with {"verdict": string}.',
  tools: [],
  model: scriptedModel({ script: () => ({ final: '' }) }),
  output: z.object({ verdict: z.string() }),
});

describe("a typed agent's final answer", () => {
  it.each([
    ['bare JSON', '{"verdict":"refund"}'],
    ['JSON in a ```json fence, as models often answer', '```json\n{"verdict":"refund"}\n```'],
    ['JSON in a bare fence with blank lines around it', '\n```\n{"verdict":"refund"}\n```\n'],
  ])('is parsed from %s', (_, text) => {
    expect(finalOutcome(typed, text)).toEqual({ status: 'completed', output: { verdict: 'refund' } });
  });

  it.each([
    ['prose around the JSON', 'Here it is: {"verdict":"refund"}'],
    ['two fenced blocks', '```json\n{"verdict":"a"}\n```\n```json\n{"verdict":"b"}\n```'],
  ])('fails the turn, quoting it, when it holds %s', (_, text) => {
    expect(finalOutcome(typed, text)).toMatchObject({
      status: 'failed',
      error: expect.stringContaining('final answer is not the JSON that agent typed declares'),
    });
  });

  it('fails the turn saying so when it is empty, rather than quoting nothing', () => {
    for (const text of ['', '  \n '])
      expect(finalOutcome(typed, text)).toEqual({
        status: 'failed',
        error: 'final answer is empty: agent typed declares a JSON output schema',
      });
  });
});
