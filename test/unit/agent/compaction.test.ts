import { describe, expect, it } from 'vitest';
import { chooseCompactionRange, summarizerRequest } from '../../../lib/agent/compaction.ts';
import { defineAgent } from '../../../lib/agent/define-agent.ts';
import { scriptedModel } from '../../../lib/agent/scripted-model.ts';
import { buildTranscript, summaryText } from '../../../lib/agent/transcript.ts';
import { CorruptStateError, InvalidInputError } from '../../../lib/core/errors.ts';
import { foldJournal } from '../../../lib/core/fold.ts';
import { journal, usage } from '../../fixtures/journal.ts';

const call = (id: string) => ({ id, name: 'lookup', input: { id } });

/** Two turns: the first looks `a` up, the second `b` then `c` in one model entry. */
function twoTurns() {
  return journal()
    .leg()
    .add('input', { input: 'first' }, 't1')
    .add('model', { toolCalls: [call('a')], stopReason: 'tool_use', usage }, 't1')
    .add('tool', { callId: 'a', tool: 'lookup', ok: true, output: 'A' }, 't1')
    .add('model', { text: 'found A', toolCalls: [], stopReason: 'end_turn', usage }, 't1')
    .add('outcome', { status: 'completed', output: 'found A' }, 't1')
    .add('input', { input: 'second' }, 't2')
    .add('model', { toolCalls: [call('b'), call('c')], stopReason: 'tool_use', usage }, 't2')
    .add('tool', { callId: 'b', tool: 'lookup', ok: true, output: 'B' }, 't2')
    .add('tool', { callId: 'c', tool: 'lookup', ok: true, output: 'C' }, 't2');
}

describe('choosing what a compaction replaces', () => {
  it('never cuts between a tool call and its result', () => {
    // Arrange
    const entries = twoTurns().entries();

    // Act: keep nothing if it could.
    const range = chooseCompactionRange(entries, 0, 0);

    // Assert: b and c are open after the model entry at seq 8 until seq 10, and a cut keeps at
    // least one entry, so the latest cut falls just before that model entry.
    expect(range).toEqual({ fromSeq: 1, throughSeq: 7 });
  });

  it('keeps as much of the recent transcript as fits in the share kept word for word', () => {
    const entries = twoTurns().entries();
    expect(chooseCompactionRange(entries, 0, 1_000)).toEqual({ fromSeq: 1, throughSeq: 2 });
  });

  it('continues from the previous compaction, and has nothing to condense with nothing before the last safe cut', () => {
    const entries = twoTurns().entries();
    expect(chooseCompactionRange(entries, 7, 0)).toBeUndefined();
    expect(chooseCompactionRange(entries, 2, 0)).toEqual({ fromSeq: 3, throughSeq: 7 });
  });
});

describe('the transcript after a compaction', () => {
  it('starts with the summary and goes on from the first entry it did not replace', () => {
    // Arrange
    const entries = twoTurns()
      .add('compaction', { summary: 'looked A up', fromSeq: 1, throughSeq: 7, model: 'm', usage }, 't2')
      .entries();

    // Act
    const transcript = buildTranscript(entries);

    // Assert
    expect(transcript[0]).toEqual({ role: 'user', content: [{ type: 'text', text: summaryText('looked A up') }] });
    expect(transcript.slice(1).map((m) => m.role)).toEqual(['assistant', 'user']);
    expect(JSON.stringify(transcript)).not.toContain('"a"');
  });

  it('gives the summarizer the previous summary and the range as plain text, roles from entry kinds', () => {
    const request = summarizerRequest(twoTurns().entries(), { fromSeq: 1, throughSeq: 5 }, 'before');
    const text = request.messages[0]?.content[0];
    expect(request.tools).toEqual([]);
    expect(text?.type === 'text' && text.text.split('\n')).toEqual([
      'Previous summary:',
      'before',
      '',
      'Continued:',
      'User: first',
      'Assistant called lookup [a] with {"id":"a"}',
      'Result of lookup [a]: A',
      'Assistant: found A',
    ]);
  });
});

describe('the fold of a compaction', () => {
  it('counts its usage and cost, and refuses one that does not continue from the previous', () => {
    const base = twoTurns();
    const view = foldJournal(
      base.add('compaction', { summary: 's', fromSeq: 1, throughSeq: 7, model: 'm', usage, costUsd: 0.5 }).entries(),
    );
    expect(view).toMatchObject({ compactedThrough: 7, modelCalls: 4, costUsd: 0.5, turnModelCalls: 2 });
    expect(view.turnUsage).toEqual({ inputTokens: 20, outputTokens: 10 });
    const skipping = twoTurns().add('compaction', { summary: 's', fromSeq: 3, throughSeq: 6, model: 'm', usage });
    expect(() => foldJournal(skipping.entries())).toThrow(CorruptStateError);
    const ahead = twoTurns().add('compaction', { summary: 's', fromSeq: 1, throughSeq: 11, model: 'm', usage });
    expect(() => foldJournal(ahead.entries())).toThrow(CorruptStateError);
  });
});

describe('an agent’s context and spend options', () => {
  const model = scriptedModel({ script: () => ({ final: 'x' }) });
  const agent = (more: object) => () => defineAgent({ name: 'a', instructions: 'i', model, ...more });

  it('refuses a keep share at or above the threshold, a bad window and a limit that is not positive', () => {
    expect(agent({ compaction: { thresholdRatio: 0.5, keepRatio: 0.5 } })).toThrow(
      /keepRatio must be above 0 and below/,
    );
    expect(agent({ contextWindowTokens: 0 })).toThrow(/contextWindowTokens must be a positive integer/);
    expect(agent({ limits: { maxTokensPerTurn: -1 } })).toThrow(InvalidInputError);
    expect(agent({ limits: { maxTokensPerTurn: -1 } })).toThrow(/limits: maxTokensPerTurn/);
    expect(agent({ prices: { m: { inputPerMillionTokens: -1, outputPerMillionTokens: 1 } } })).toThrow(/prices.m/);
  });
});
