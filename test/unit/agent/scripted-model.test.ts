import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../lib/adapters/memory/manual-clock.ts';
import { scriptedModel } from '../../../lib/agent/scripted-model.ts';

const request = { system: '', messages: [], tools: [] };

describe('the scripted model', () => {
  it('simulates a streaming provider: the reply in pieces, apart in time, then the whole reply', async () => {
    const clock = new ManualClock();
    const model = scriptedModel({
      clock,
      stream: { chunkChars: 4, chunkDelayMs: 30 },
      script: () => ({ final: 'Every id was found.' }),
    });
    const deltas: Array<{ text: string; at: number }> = [];
    const answer = model.converse(request, new AbortController().signal, {
      text: (text) => deltas.push({ text, at: clock.now() - 1_700_000_000_000 }),
    });
    while (clock.advanceToNextSleep()) await clock.flush();
    const response = await answer;

    expect(deltas.map((d) => d.text)).toEqual(['Ever', 'y id', ' was', ' fou', 'nd.']);
    expect(deltas.map((d) => d.at)).toEqual([0, 30, 60, 90, 120]);
    expect(response.text).toBe(deltas.map((d) => d.text).join(''));
  });

  it('streams nothing unless asked to, even given a sink', async () => {
    const model = scriptedModel({ script: () => ({ final: 'done' }) });
    const deltas: string[] = [];
    const response = await model.converse(request, new AbortController().signal, { text: (t) => deltas.push(t) });
    expect(deltas).toEqual([]);
    expect(response.text).toBe('done');
  });

  it('estimates input tokens from the transcript’s JSON, the same for messages it has seen before', async () => {
    const model = scriptedModel({ script: () => ({ final: 'done' }) });
    const first = { role: 'user' as const, content: [{ type: 'text' as const, text: 'look up a, b and c' }] };
    const second = { role: 'assistant' as const, content: [{ type: 'text' as const, text: 'ok, ünïcode too' }] };
    for (const messages of [[], [first], [first, second], [first, second, first]]) {
      const { usage } = await model.converse({ ...request, messages }, new AbortController().signal);
      expect(usage.inputTokens).toBe(Math.ceil(JSON.stringify(messages).length / 4));
    }
  });
});
