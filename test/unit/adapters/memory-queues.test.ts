import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../lib/adapters/memory/manual-clock.ts';
import { MemoryWorkQueue } from '../../../lib/adapters/memory/memory-queues.ts';
import { deriveSessionId } from '../../../lib/core/ids.ts';
import type { Kick } from '../../../lib/core/messages.ts';

const idOf = (ticketId: string) => deriveSessionId('default', 'a', ticketId);
const kick = (ticketId: string): Kick => ({
  v: 1,
  session: { tenant: 'default', agent: 'a', id: idOf(ticketId) },
  reason: 'first',
});

describe('MemoryWorkQueue', () => {
  it('keeps every kick sent while receive drains only the visible ones', async () => {
    // Arrange
    const clock = new ManualClock(0);
    const queue = new MemoryWorkQueue({ clock });
    await queue.sendKick(kick('now'));
    await queue.sendKick(kick('later'), { delaySeconds: 5 });

    // Act
    const first = queue.receive();
    clock.advance(5_000);
    const second = queue.receive();

    // Assert
    expect(first.map((message) => message.body.session.id)).toEqual([idOf('now')]);
    expect(second.map((message) => message.body.session.id)).toEqual([idOf('later')]);
    expect(queue.bodies.map((body) => body.session.id)).toEqual([idOf('now'), idOf('later')]);
    expect(queue.pendingCount).toBe(0);
  });

  it('tells listeners of each send, so a harness can deliver kicks at once', async () => {
    // Arrange
    const queue = new MemoryWorkQueue();
    const seen: string[] = [];
    const unsubscribe = queue.onSend((message) => seen.push(message.body.session.id));

    // Act
    await queue.sendKick(kick('one'));
    unsubscribe();
    await queue.sendKick(kick('two'));

    // Assert
    expect(seen).toEqual([idOf('one')]);
  });

  it('fails the next send when told to, and sends nothing for it', async () => {
    // Arrange
    const queue = new MemoryWorkQueue();
    queue.failNextSend(new Error('throttled'));

    // Act
    const send = queue.sendKick(kick('one'));

    // Assert
    await expect(send).rejects.toThrow('throttled');
    expect(queue.sent).toEqual([]);
  });
});
