import { errorMessage, InvalidInputError } from '../../lib/core/errors.ts';
import { foldJournal, pendingCallKey } from '../../lib/core/fold.ts';
import { answerApprovals, resolveParked } from './commands.ts';
import type { Violation } from './facts.ts';
import { type FaultProfile, NO_FAULTS } from './faults.ts';
import { finalCheck } from './invariants.ts';
import { type RunStats, World } from './world.ts';

/**
 * One seed, start to end: the fault phase plays the plan's commands under the seed's faults;
 * the drain turns the faults off and runs the world until nothing is left to happen, an operator
 * answering whatever waits for a human; then the invariants are checked.
 */

export interface RunOptions {
  /** Keep every trace event (for --verbose). */
  readonly traceAll?: boolean | undefined;
  /**
   * Add stops of one turn to the plan (default true). Off, a seed plays the plan drawn before
   * stops existed: the named seeds that once failed replay what they found.
   */
  readonly stops?: boolean | undefined;
}

export interface SeedResult {
  readonly seed: number;
  readonly ok: boolean;
  readonly violations: readonly Violation[];
  readonly traceHash: string;
  readonly traceTail: readonly string[];
  readonly traceAll?: readonly string[] | undefined;
  readonly stats: RunStats;
  readonly profile: FaultProfile;
  readonly plan: string;
}

/** Steps of the fault phase past the last command, at most. */
const AFTER_COMMANDS_STEPS = 400;
const MAX_CHAOS_STEPS = 4_000;
const MAX_STEPS = 40_000;
/** The drain may take this much virtual time (result retries back off for up to ~50 minutes). */
const MAX_DRAIN_MS = 4 * 3600 * 1000;

export async function runSeed(seed: number, options: RunOptions = {}): Promise<SeedResult> {
  const world = new World({ seed, traceAll: options.traceAll, stops: options.stops });
  const tail = world.rng.int(0, AFTER_COMMANDS_STEPS);
  let afterCommands = 0;
  while (world.steps < MAX_CHAOS_STEPS) {
    if (world.commandsLeft === 0 && afterCommands++ >= tail) break;
    if (!(await world.step('chaos')) && world.commandsLeft === 0) break;
  }

  world.profile = NO_FAULTS;
  world.skipRemainingCommands();
  world.trace.event('sim', 'DRAIN');
  const drainEnds = world.clock.now() + MAX_DRAIN_MS;
  let releasesConfirmed = false;
  for (;;) {
    if (world.steps > MAX_STEPS || world.clock.now() > drainEnds) {
      world.facts.violate(
        'settles',
        `the world did not come to rest within ${MAX_STEPS} steps and ${MAX_DRAIN_MS / 60_000} minutes`,
      );
      break;
    }
    if (world.idleNow() && (await operatorRound(world, false))) continue;
    if (await world.step('drain')) continue;
    if (await operatorRound(world, true)) continue;
    if (!releasesConfirmed) {
      releasesConfirmed = true;
      if (confirmReleases(world)) continue;
    }
    break;
  }
  try {
    await finalCheck(world);
  } catch (error) {
    world.facts.violate('checks-run', `the final checks threw ${errorMessage(error)}`);
  }
  return {
    seed,
    ok: world.facts.violations.length === 0,
    violations: world.facts.violations,
    traceHash: world.trace.hash,
    traceTail: world.trace.tail,
    traceAll: world.trace.all,
    stats: world.stats(),
    profile: world.chaosProfile,
    plan: describePlan(world),
  };
}

/**
 * An operator answers what waits for a human: each approval (yes or no) and each parked call
 * (truthfully, from the downstream's record). A question answered before and asked again once
 * the world is at rest means the answer was lost.
 */
async function operatorRound(world: World, atRest: boolean): Promise<boolean> {
  const questions = await world.sim.outside(async () => {
    const waiting = await world.memory.listSessions({ state: 'waiting', limit: 10_000 });
    const found: { key: (typeof waiting)[number]['key']; question: string; kind: 'approval' | 'parked' }[] = [];
    for (const record of waiting) {
      // A record that has not moved since the last look asks the same questions: no journal read.
      const look = `${record.key.id}:${record.epoch}:${record.pendingVersion}:${record.updatedAt}`;
      const cached = world.operatorLooks.get(look);
      if (cached) {
        found.push(...cached);
        continue;
      }
      const before = found.length;
      let entries: Awaited<ReturnType<typeof world.memory.readJournal>>;
      let view: ReturnType<typeof foldJournal>;
      try {
        entries = await world.memory.readJournal(record.key);
        view = foldJournal(entries);
      } catch {
        continue;
      }
      const awaited = view.awaitingApproval[0];
      if (awaited !== undefined) {
        found.push({
          key: record.key,
          kind: 'approval',
          question: `approval ${record.key.id} ${awaited.callId} @${awaited.seq}`,
        });
      }
      const parked = view.pendingCalls.find((p) => p.call.id === view.parked?.callId);
      if (parked)
        found.push({
          key: record.key,
          kind: 'parked',
          question: `parked ${record.key.id} ${pendingCallKey(record.key, parked)}`,
        });
      world.operatorLooks.set(look, found.slice(before));
    }
    return found;
  });
  let spawned = false;
  for (const { key, question, kind } of questions) {
    if (world.facts.answered.has(question)) {
      if (atRest)
        world.facts.violate('answer-carried-out', `${question}: answered, and the session still waits for it`);
      continue;
    }
    if (world.operatorBusy.has(question)) continue;
    world.operatorBusy.add(question);
    spawned = true;
    const approved = world.rng.chance(0.75);
    world.sim.spawn(
      'operator',
      `op(${kind} ${key.id.slice(0, 6)})`,
      () =>
        kind === 'approval'
          ? answerApprovals(world.clientContext, key, approved)
          : resolveParked(world.clientContext, key),
      (result) => {
        world.operatorBusy.delete(question);
        if (!result.ok && !(result.error instanceof InvalidInputError))
          world.facts.violate('client-completes', `the operator's ${kind} threw ${errorMessage(result.error)}`);
      },
    );
  }
  return spawned;
}

/** Asks every accepted release again and waits for it: `released: true` is the promise. */
function confirmReleases(world: World): boolean {
  const keys = new Map(world.facts.releases.map((r) => [r.key.id, r.key]));
  for (const key of keys.values())
    world.sim.spawn(
      'operator',
      `op(release ${key.id.slice(0, 6)})`,
      () => world.client.release(key.id, { waitMs: 90_000 }),
      (result) => {
        if (result.ok && !result.value.released)
          world.facts.violate(
            'release-carried-out',
            `${key.id}: a release asked again at rest answered released: false`,
          );
        if (!result.ok && !(result.error instanceof InvalidInputError))
          world.facts.violate('client-completes', `the operator's release threw ${errorMessage(result.error)}`);
      },
    );
  return keys.size > 0;
}

function describePlan(world: World): string {
  const sessions = world.plan.sessions.map((s) => `${s.name}=${s.agent}(${s.key.id.slice(0, 6)})`).join(' ');
  const commands = world.plan.commands
    .filter((c) => c.kind !== 'submit')
    .map((c) => ('session' in c ? `${c.kind}${'mode' in c ? `/${c.mode}` : ''}:${c.session.name}` : `${c.kind}`))
    .join(' ');
  return `[${world.plan.theme}] ${sessions}; then ${commands || 'nothing'}`;
}
