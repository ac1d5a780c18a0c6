import { describe, expect, it } from 'vitest';
import { buildTranscript, TranscriptBuilder } from '../../../lib/agent/transcript.ts';
import { journal, usage } from '../../fixtures/journal.ts';

const call = (id: string) => ({ id, name: 'lookup', input: { id } });

/**
 * A journal with every kind the transcript reads: a turn whose call is left unanswered, a
 * message, a once-only call reconciled as unknown, a compaction and a turn after it.
 */
function everyKind() {
  return journal()
    .leg()
    .add('input', { input: 'first' }, 't1')
    .add('model', { toolCalls: [call('a'), call('b')], stopReason: 'tool_use', usage }, 't1')
    .add('tool', { callId: 'a', tool: 'lookup', ok: true, output: 'A' }, 't1')
    .add('outcome', { status: 'superseded', error: 'superseded by turn t2' }, 't1')
    .add('input', { input: { ask: 'second' } }, 't2')
    .add('message', { text: 'also c', id: 'm1' }, 't2')
    .add('model', { text: 'looking', toolCalls: [call('c')], stopReason: 'tool_use', usage }, 't2')
    .add('reconciled', { callId: 'c', verdict: 'unknown' }, 't2')
    .add('outcome', { status: 'failed', error: 'parked' }, 't2')
    .add('input', { input: 'third' }, 't3')
    .add('model', { toolCalls: [call('d')], stopReason: 'tool_use', usage }, 't3')
    .add('tool', { callId: 'd', tool: 'lookup', ok: false, error: 'no such id' }, 't3')
    .add('compaction', { summary: 'looked things up', fromSeq: 1, throughSeq: 10, model: 'm', usage }, 't3')
    .add('model', { toolCalls: [call('e')], stopReason: 'tool_use', usage }, 't3')
    .add('reconciled', { callId: 'e', verdict: 'done', output: 'E' }, 't3')
    .add('model', { text: 'done', toolCalls: [], stopReason: 'end_turn', usage }, 't3')
    .entries();
}

describe('the transcript a leg extends step by step', () => {
  it('is at every length of the journal the transcript built from scratch', () => {
    const entries = everyKind();
    const builder = new TranscriptBuilder();
    const growing: (typeof entries)[number][] = [];
    for (const entry of entries) {
      growing.push(entry);
      expect(builder.extend(growing)).toEqual(buildTranscript(growing));
    }
  });

  it('gives the same transcript when extended by several entries at once, and leaves what it gave before as it was', () => {
    const entries = everyKind();
    const builder = new TranscriptBuilder();
    const early = builder.extend(entries.slice(0, 6));
    const snapshot = structuredClone(early);
    expect(builder.extend(entries.slice(0, 12))).toEqual(buildTranscript(entries.slice(0, 12)));
    expect(builder.extend(entries)).toEqual(buildTranscript(entries));
    expect(early).toEqual(snapshot);
  });
});
