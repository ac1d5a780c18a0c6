import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../lib/adapters/memory/manual-clock.ts';
import { servedLongEnough, startChaosMonkey } from '../../../lib/chaos/chaos-monkey.ts';
import type { WorkerInfo } from '../../../lib/local/supervisor.ts';
import { FAILPOINTS } from '../../../lib/runtime/failpoints.ts';

/** Two workers as a supervisor reports them; a kill restarts the slot (not ready until told). */
function fakeSupervisor(clock: ManualClock, startMs: number) {
  const workers: WorkerInfo[] = [0, 1].map((slot) => ({
    slot,
    pid: 100 + slot,
    restarts: 0,
    ready: true,
    startedAtMs: clock.now() - 2 * startMs,
    readyAtMs: clock.now() - startMs,
    served: 1,
  }));
  const signals: Array<[number, NodeJS.Signals, number]> = [];
  return {
    workers: () => [...workers],
    signals,
    signal: (pid: number, name: NodeJS.Signals) => {
      signals.push([pid, name, clock.now()]);
      const i = workers.findIndex((w) => w.pid === pid);
      const w = workers[i]!;
      if (name === 'SIGKILL')
        workers[i] = {
          ...w,
          pid: w.pid + 10,
          restarts: w.restarts + 1,
          ready: false,
          startedAtMs: clock.now(),
          served: 0,
        };
      return true;
    },
    /** The slot's process reports ready and then finishes an invocation. */
    ready: (slot: number) => {
      workers[slot] = { ...workers[slot]!, ready: true, readyAtMs: clock.now(), served: 1 };
    },
  };
}

describe('the chaos monkey', () => {
  it('kills only while every running worker has served as long as it took to start, never faster than one starts', () => {
    // Arrange: ticks every 1 400 ms (1 000 ± jitter at random 0.9); random 0.9 picks the last candidate.
    const clock = new ManualClock();
    const supervisor = fakeSupervisor(clock, 1_000);
    const monkey = startChaosMonkey({
      workers: supervisor.workers,
      killEveryMs: 1_000,
      random: () => 0.9,
      signal: supervisor.signal,
      clock,
    });

    // Act + Assert
    clock.advance(1_400);
    expect(supervisor.signals.map(([pid, name]) => [pid, name])).toEqual([[101, 'SIGKILL']]);
    clock.advance(1_400); // slot 1 is still starting: slot 0 is the only one up, so it is spared
    clock.advance(1_400);
    supervisor.ready(1); // slot 1 took 2 800 ms to start
    clock.advance(1_400); // slot 1 has served 1 400 ms, less than its start took: nobody is killed
    expect(monkey.stats().kills).toBe(1);
    clock.advance(1_400); // slot 1 has served 2 800 ms: the fleet is up and serving again
    expect(supervisor.signals.map(([pid, name, at]) => [pid, name, at - supervisor.signals[0]![2]])).toEqual([
      [101, 'SIGKILL', 0],
      [111, 'SIGKILL', 5_600],
    ]);
    monkey.stop();
    clock.advance(10_000);
    expect(monkey.stats().kills).toBe(2);
  });

  it('arms one crash point at a time, mid-step first and until it fires, and none while a worker is starting', () => {
    // Arrange
    const clock = new ManualClock();
    const supervisor = fakeSupervisor(clock, 1_000);
    const failpointsFile = join(mkdtempSync(join(tmpdir(), 'baton-monkey-')), 'failpoints.json');
    const armed = () => FAILPOINTS.filter((name) => !existsSync(`${failpointsFile}.${name}.fired`));
    const fire = (name: string) => writeFileSync(`${failpointsFile}.${name}.fired`, '');
    const monkey = startChaosMonkey({
      workers: supervisor.workers,
      killEveryMs: 0,
      failpointEveryMs: 1_000,
      failpointsFile,
      random: () => 0.5,
      signal: supervisor.signal,
      clock,
    });

    // Act + Assert: nothing is armed before the first tick; mid-step stays armed until it fires.
    expect(armed()).toEqual([]);
    clock.advance(1_000);
    clock.advance(1_000);
    expect(armed()).toEqual(['mid-step']);
    fire('mid-step');
    clock.advance(1_000);
    expect(armed()).toEqual(['before-acquire']);
    // Another point that does not fire gives way after three ticks.
    clock.advance(2_000);
    expect(armed()).toEqual(['before-acquire']);
    clock.advance(1_000);
    expect(armed()).toEqual(['after-marker']);
    // It fires and kills its worker: while that one restarts, nothing is armed.
    fire('after-marker');
    supervisor.signal(100, 'SIGKILL');
    clock.advance(1_000);
    expect(armed()).toEqual([]);
    supervisor.ready(0); // it took 1 000 ms to start
    clock.advance(1_000); // and has served as long
    expect(armed()).toEqual(['after-append']);
    expect(monkey.stats().rearmed).toBe(4);
    monkey.stop();
  });

  it('pauses a worker for pauseForMs, leaves the other running and kills nobody meanwhile', () => {
    // Arrange
    const clock = new ManualClock();
    const supervisor = fakeSupervisor(clock, 1_000);
    const monkey = startChaosMonkey({
      workers: supervisor.workers,
      killEveryMs: 1_500,
      pauseEveryMs: 1_000,
      pauseForMs: 5_000,
      random: () => 0,
      signal: supervisor.signal,
      clock,
    });

    // Act: the pause ticks at 500 ms, the kill ticks at 750 ms while the pause lasts.
    clock.advance(500);
    for (let i = 0; i < 6; i++) clock.advance(750);
    const beforeResume = [...supervisor.signals];
    clock.advance(1_000);
    monkey.stop();

    // Assert
    expect(beforeResume.map(([pid, name]) => [pid, name])).toEqual([[100, 'SIGSTOP']]);
    expect(supervisor.signals.map(([pid, name]) => [pid, name])).toContainEqual([100, 'SIGCONT']);
    const [, , resumedAt] = supervisor.signals.find(([, name]) => name === 'SIGCONT')!;
    expect(resumedAt - beforeResume[0]![2]).toBe(5_000);
    expect(monkey.stats().pauses).toBeGreaterThanOrEqual(1);
  });

  it('lands a pause that found the fleet starting as soon as it serves, not a whole period later', () => {
    // Arrange: slot 1 is starting when the pause falls due (at 5 000 ms: period 10 000 at random 0).
    const clock = new ManualClock();
    const start = clock.now();
    const supervisor = fakeSupervisor(clock, 1_000);
    supervisor.signal(101, 'SIGKILL');
    supervisor.signals.length = 0;
    const monkey = startChaosMonkey({
      workers: supervisor.workers,
      killEveryMs: 0,
      pauseEveryMs: 10_000,
      pauseForMs: 5_000,
      random: () => 0,
      signal: supervisor.signal,
      clock,
    });

    // Act
    clock.advance(6_000);
    supervisor.ready(1); // slot 1 took 6 000 ms to start: the fleet serves from 12 000 ms
    clock.advance(5_900);
    const beforeServing = supervisor.signals.length;
    clock.advance(350);
    const stopped = supervisor.signals.filter(([, name]) => name === 'SIGSTOP');
    monkey.stop();

    // Assert
    expect(beforeServing).toBe(0);
    expect(stopped.map(([pid, name, at]) => [pid, name, at - start])).toEqual([[100, 'SIGSTOP', 12_000]]);
    expect(monkey.stats().pauses).toBe(1);
  });

  it('counts a worker as killable only once it has finished an invocation and served as long as its start took', () => {
    const w = { slot: 0, pid: 1, restarts: 0, ready: true, startedAtMs: 0, readyAtMs: 3_000, served: 1 };
    expect(servedLongEnough(w, 5_999)).toBe(false);
    expect(servedLongEnough(w, 6_000)).toBe(true);
    expect(servedLongEnough({ ...w, served: 0 }, 60_000), 'no invocation finished yet').toBe(false);
    expect(servedLongEnough({ ...w, ready: false, readyAtMs: undefined }, 60_000)).toBe(false);
  });
});
