import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../lib/adapters/memory/manual-clock.ts';
import { MemoryLiveText } from '../../../lib/adapters/memory/memory-live-text.ts';
import type { LiveTextChunk, LiveTextStore } from '../../../lib/ports/live-text.ts';
import { DEFAULT_LIVE_TEXT_POLICY, liveTextWriter } from '../../../lib/runtime/live-text-writer.ts';

const session = { tenant: 't', agent: 'a', id: 's-1' };

/** Runs promise continuations (a write's completion) without moving time. */
const settle = async () => {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
};

function setup(store: LiveTextStore = new MemoryLiveText()) {
  const clock = new ManualClock();
  const results: boolean[] = [];
  const writer = liveTextWriter({
    store,
    clock,
    session,
    seq: 7,
    turnId: 'turn-1',
    onWrite: ({ ok }) => results.push(ok),
  });
  const chunks = () => store.read(session, 7, { now: clock.now() });
  return { clock, writer, results, chunks };
}

const joined = (chunks: LiveTextChunk[]) => chunks.map((c) => c.text).join('');

describe('live text writer', () => {
  it('writes the first delta at once and coalesces the next ones into one write per gap', async () => {
    const { clock, writer, chunks } = setup();
    writer.text('Hel');
    await settle();
    expect(await chunks()).toEqual([{ seq: 7, turnId: 'turn-1', index: 0, text: 'Hel' }]);
    for (const delta of ['lo', ',', ' wor', 'ld']) {
      clock.advance(40);
      writer.text(delta);
      await settle();
    }
    // 160 ms after the first write: still inside the 200 ms gap, nothing more written.
    expect(writer.writes).toBe(1);
    clock.advance(40);
    await settle();
    expect(writer.writes).toBe(2);
    expect(await chunks()).toEqual([
      { seq: 7, turnId: 'turn-1', index: 0, text: 'Hel' },
      { seq: 7, turnId: 'turn-1', index: 1, text: 'lo, world' },
    ]);
    await writer.close();
  });

  it('bounds the writes of a response however long it streams, and the chunks concatenate to the text streamed', async () => {
    const { clock, writer, chunks } = setup();
    let streamed = '';
    // Ten minutes of a delta every 20 ms: 30,000 deltas, 600,000 characters.
    for (let i = 0; i < 30_000; i++) {
      const delta = `${String(i % 100).padStart(19, '.')}.`;
      streamed += delta;
      writer.text(delta);
      clock.advance(20);
      if (i % 50 === 0) await settle();
    }
    await settle();
    expect(writer.writes).toBe(DEFAULT_LIVE_TEXT_POLICY.maxWrites);
    const written = await chunks();
    expect(written.map((c) => c.index)).toEqual([...Array(DEFAULT_LIVE_TEXT_POLICY.maxWrites).keys()]);
    expect(streamed.startsWith(joined(written))).toBe(true);
    // The gap grows, so the capped writes still covered about two minutes of the stream.
    expect(joined(written).length).toBeGreaterThan(100_000);
    await writer.close();
  });

  it('keeps a failed write’s text for the next one, under the same index', async () => {
    const memory = new MemoryLiveText();
    let failNext = true;
    const flaky: LiveTextStore = {
      put: async (key, chunk, expiresAt) => {
        if (failNext) {
          failNext = false;
          throw new Error('throttled');
        }
        return memory.put(key, chunk, expiresAt);
      },
      read: (key, seq, options) => memory.read(key, seq, options),
    };
    const { clock, writer, results, chunks } = setup(flaky);
    writer.text('one ');
    await settle();
    writer.text('two');
    clock.advance(200);
    await settle();
    expect(results).toEqual([false, true]);
    expect(await chunks()).toEqual([{ seq: 7, turnId: 'turn-1', index: 0, text: 'one two' }]);
    await writer.close();
  });

  it('writes nothing after close: the pending text belongs to the journaled entry', async () => {
    const { clock, writer, chunks } = setup();
    writer.text('first');
    await settle();
    writer.text(' second');
    await writer.close();
    writer.text(' third');
    clock.advance(10_000);
    await settle();
    expect(joined(await chunks())).toBe('first');
    expect(clock.pendingSleeps).toBe(0);
  });

  it('stops for a response whose pending text would not fit one item', async () => {
    const { clock, writer, chunks } = setup();
    writer.text('a');
    await settle();
    writer.text('b'.repeat(DEFAULT_LIVE_TEXT_POLICY.maxChunkChars + 1));
    clock.advance(1_000);
    writer.text('c');
    clock.advance(1_000);
    await settle();
    expect(joined(await chunks())).toBe('a');
    await writer.close();
  });

  it('hides chunks past their expiry', async () => {
    const { clock, writer, chunks } = setup();
    writer.text('soon gone');
    await writer.close();
    expect(await chunks()).toHaveLength(1);
    clock.advance(DEFAULT_LIVE_TEXT_POLICY.ttlMs);
    expect(await chunks()).toEqual([]);
  });
});
