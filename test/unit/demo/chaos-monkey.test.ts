import { describe, expect, it } from 'vitest';
import { startChaosMonkey } from '../../../lib/demo/chaos-monkey.ts';

describe('startChaosMonkey', () => {
  it('kills one worker with SIGKILL per tick, and none while a worker is still starting', async () => {
    // Arrange
    const killed: Array<[number, string]> = [];
    let starting = false;
    const monkey = startChaosMonkey({
      workers: () => [
        { slot: 0, pid: 100, restarts: 0, ready: true },
        { slot: 1, pid: 101, restarts: 0, ready: !starting },
      ],
      everyMs: 10,
      random: () => 0.9,
      kill: (pid, signal) => killed.push([pid, signal]),
      onKill: () => {
        starting = true;
      },
    });

    // Act
    await new Promise((resolve) => setTimeout(resolve, 60));
    monkey.stop();

    // Assert
    expect(killed).toEqual([[101, 'SIGKILL']]);
    expect(monkey.kills).toBe(1);
  });
});
