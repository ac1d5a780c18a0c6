import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../lib/adapters/memory/manual-clock.ts';

describe('ManualClock', () => {
  it('wakes a sleeper only when time has advanced past its deadline', async () => {
    // Arrange
    const clock = new ManualClock(0);
    let woke = false;
    const sleeping = clock.sleep(1_000).then(() => {
      woke = true;
    });

    // Act
    clock.advance(999);
    await clock.flush();
    const early = woke;
    clock.advance(1);
    await sleeping;

    // Assert
    expect(early).toBe(false);
    expect(woke).toBe(true);
    expect(clock.now()).toBe(1_000);
  });

  it('rejects a sleep with the abort reason when its signal aborts first', async () => {
    // Arrange
    const clock = new ManualClock();
    const controller = new AbortController();
    const sleeping = clock.sleep(1_000, controller.signal);

    // Act
    controller.abort(new Error('budget spent'));

    // Assert
    await expect(sleeping).rejects.toThrow('budget spent');
    expect(clock.pendingSleeps).toBe(0);
  });

  it('jumps to the earliest pending deadline', async () => {
    // Arrange
    const clock = new ManualClock(0);
    const order: number[] = [];
    const sleeps = [clock.sleep(300).then(() => order.push(300)), clock.sleep(100).then(() => order.push(100))];

    // Act
    const first = clock.advanceToNextSleep();
    await clock.flush();
    clock.advanceToNextSleep();
    await Promise.all(sleeps);

    // Assert
    expect(first).toBe(true);
    expect(order).toEqual([100, 300]);
    expect(clock.now()).toBe(300);
    expect(clock.advanceToNextSleep()).toBe(false);
  });

  it('refuses to move backwards', () => {
    const clock = new ManualClock(10);

    expect(() => clock.set(5)).toThrow(RangeError);
  });
});
