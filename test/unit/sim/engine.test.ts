import { describe, expect, it } from 'vitest';
import { SIM_START_MS, SimClock } from '../../sim/clock.ts';
import { Rng } from '../../sim/rng.ts';
import { Scheduler } from '../../sim/scheduler.ts';
import { Trace } from '../../sim/trace.ts';

/** The simulator's parts its runs rely on: one seed, one sequence; timers owned; crashes final. */

function world() {
  const sim = new Scheduler(new Rng(1), new Trace(() => SIM_START_MS, SIM_START_MS));
  const clock = new SimClock(sim);
  return { sim, clock };
}

describe('Rng', () => {
  it('draws the same sequence from the same seed and another from another seed', () => {
    // Arrange
    const draw = (seed: number) => {
      const rng = new Rng(seed);
      return Array.from({ length: 5 }, () => rng.int(0, 1_000_000));
    };

    // Act / Assert
    expect(draw(7)).toEqual(draw(7));
    expect(draw(7)).not.toEqual(draw(8));
  });
});

describe('SimClock', () => {
  it('wakes sleepers in deadline order and runs a timer as the actor that set it', async () => {
    // Arrange
    const { sim, clock } = world();
    const order: string[] = [];
    let timerActor: string | undefined;
    sim.spawn(
      'worker',
      'w1',
      async () => {
        clock.setTimer(50, () => {
          timerActor = sim.current()?.name;
        });
        await clock.sleep(100);
        order.push('w1');
      },
      () => undefined,
    );
    sim.spawn(
      'worker',
      'w2',
      async () => {
        await clock.sleep(30);
        order.push('w2');
      },
      () => undefined,
    );
    await sim.settle();

    // Act
    clock.advance(200);
    await sim.settle();

    // Assert
    expect(order).toEqual(['w2', 'w1']);
    expect(timerActor).toBe('w1');
  });
});

describe('Scheduler', () => {
  it('lets a gated call go on only when opened, and a crashed actor never returns from it', async () => {
    // Arrange
    const { sim } = world();
    const done: string[] = [];
    let returned = false;
    const a = sim.spawn(
      'worker',
      'a',
      async () => {
        await sim.gate('store.append', 'write');
        done.push('a');
      },
      () => undefined,
    );
    const b = sim.spawn(
      'worker',
      'b',
      async () => {
        await sim.gate('store.append', 'write');
        returned = true;
      },
      () => undefined,
    );
    let crashed = false;
    b.onCrash = () => {
      crashed = true;
    };
    await sim.settle();
    expect(sim.waitingGates).toBe(2);

    // Act
    sim.crash(b, 'test');
    sim.open(sim.enabledGates(0).find((g) => g.actor === a)!, undefined);
    await sim.settle();

    // Assert
    expect(done).toEqual(['a']);
    expect(returned).toBe(false);
    expect(crashed).toBe(true);
    expect(sim.waitingGates).toBe(0);
    expect(a.state).toBe('done');
  });

  it('refuses a port call made outside any actor (it would escape the seed)', () => {
    // Arrange
    const { sim } = world();

    // Act / Assert
    expect(() => sim.gate('store.getSession', 'read')).toThrow(/outside any actor/);
  });
});
