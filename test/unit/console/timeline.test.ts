import { describe, expect, it } from 'vitest';
// The console's own module (plain JavaScript, served as is).
import {
  addModelText,
  buildTimeline,
  formatAge,
  formatDuration,
  liveTextAfterEntry,
} from '../../../console/timeline.js';

const at = (ms: number) => new Date(1_700_000_000_000 + ms).toISOString();
const leg = (seq: number, ms: number, reason: string, owner: string) => ({
  seq,
  kind: 'leg',
  epoch: seq,
  at: at(ms),
  data: { reason, owner, traceparent: 't' },
});

describe('the console timeline', () => {
  it('groups steps under their legs, with model and tool durations, and counts recoveries and retries', () => {
    // Arrange: leg 1 asks for a tool and dies; leg 2 (a recovery) reruns it, retries once, and finishes.
    const usage = { inputTokens: 10, outputTokens: 5 };
    const events = [
      { seq: 1, kind: 'input', epoch: 1, at: at(0), data: { input: { order: 1 } } },
      leg(2, 100, 'first', 'owner-a'),
      {
        seq: 3,
        kind: 'model',
        epoch: 1,
        at: at(400),
        data: { toolCalls: [{ id: 'c1', name: 'lookup', input: {} }], stopReason: 'tool_use', usage },
      },
      leg(4, 5_000, 'recovery', 'owner-b'),
      { seq: 5, kind: 'tool', epoch: 2, at: at(5_750), data: { callId: 'c1', tool: 'lookup', ok: true, output: 'x' } },
      { seq: 6, kind: 'error', epoch: 2, at: at(5_800), data: { source: 'model', message: 'throttled', attempt: 1 } },
      leg(7, 6_000, 'retry', 'owner-c'),
      { seq: 8, kind: 'outcome', epoch: 3, at: at(6_100), data: { status: 'completed', output: 'done' } },
    ];

    // Act
    const timeline = buildTimeline(events);

    // Assert
    expect(timeline.legs.map((l) => l.reason)).toEqual(['intake', 'first', 'recovery', 'retry']);
    expect(timeline.recoveries).toBe(1);
    expect(timeline.retries).toBe(1);
    const first = timeline.legs[1]!;
    const recovery = timeline.legs[2]!;
    expect(first.steps[0]).toMatchObject({ title: 'model', durationMs: 300 });
    expect(first.steps[0]?.detail).toContain('calls lookup · 15 tokens');
    // The rerun tool started no earlier than the recovery leg took over.
    expect(recovery.owner).toBe('owner-b');
    expect(recovery.steps[0]).toMatchObject({ title: 'tool lookup', durationMs: 750 });
    expect(recovery.steps[1]).toMatchObject({ title: 'retry 1', highlight: 'retry' });
  });

  it('opens a leg at an input that carries its leg’s marker, with the input as that leg’s first step', () => {
    const events = [
      {
        seq: 1,
        kind: 'input',
        epoch: 1,
        at: at(0),
        data: { input: { order: 1 }, leg: { reason: 'first', owner: 'owner-a', traceparent: 't' } },
      },
      { seq: 2, kind: 'outcome', epoch: 1, at: at(300), data: { status: 'completed', output: 'done' } },
    ];

    const timeline = buildTimeline(events);

    expect(timeline.legs.map((l) => [l.reason, l.owner, l.seq])).toEqual([['first', 'owner-a', 1]]);
    expect(timeline.legs[0]?.steps.map((s) => s.title)).toEqual(['input', 'outcome completed']);
  });

  it('shows the agent version a turn runs on and a move to another', () => {
    const events = [
      {
        seq: 1,
        kind: 'input',
        epoch: 1,
        at: at(0),
        data: { input: 'hi', agentVersion: 2, leg: { reason: 'first', owner: 'owner-a', traceparent: 't' } },
      },
      { seq: 2, kind: 'upgraded', epoch: 1, at: at(1), data: { from: 1, to: 2 } },
    ];

    const steps = buildTimeline(events).legs[0]?.steps;

    expect(steps?.map((s) => [s.title, s.detail])).toEqual([
      ['input (v2)', 'hi'],
      ['upgraded', 'agent version 1 → 2'],
    ]);
  });

  it('shows where a fork came from, its effects and the version it runs on', () => {
    const events = [
      {
        seq: 5,
        kind: 'forked',
        epoch: 2,
        at: at(0),
        data: { from: { agent: 'desk', id: 'S-1' }, cursor: 4, effects: 'ask', ledger: [{ seq: 8 }], version: 3 },
      },
    ];

    const steps = buildTimeline(events).legs[0]?.steps;

    expect(steps?.map((s) => [s.title, s.detail])).toEqual([
      ['forked (v3)', 'from session S-1 at seq 4 · effects ask · 1 once-only call(s) after it'],
    ]);
  });

  it('formats durations and ages for people', () => {
    expect(formatDuration(850)).toBe('850 ms');
    expect(formatDuration(3_240)).toBe('3.2 s');
    expect(formatDuration(125_000)).toBe('2 min 5 s');
    expect(formatAge(at(0), Date.parse(at(90_000)))).toBe('1 min ago');
  });
});

describe('the console’s live model text', () => {
  it('appends chunks in order, skips repeats and gaps, and gives way to the entry at its seq', () => {
    const text = (seq: number, chunk: number, t: string) => ({ seq, chunk, text: t });
    let live = addModelText(undefined, text(5, 0, 'Every '));
    live = addModelText(live, text(5, 1, 'id '));
    live = addModelText(live, text(5, 1, 'id ')); // a reconnect sent it again
    live = addModelText(live, text(5, 3, 'found')); // a gap: wait for chunk 2
    expect(live).toEqual({ seq: 5, chunk: 1, text: 'Every id ' });
    expect(addModelText(undefined, text(5, 2, 'was '))).toBeUndefined();
    expect(liveTextAfterEntry(live, { seq: 4 })).toBe(live);
    expect(liveTextAfterEntry(live, { seq: 5 })).toBeUndefined();
    expect(addModelText(live, text(7, 0, 'Next'))).toEqual({ seq: 7, chunk: 0, text: 'Next' });
  });
});
