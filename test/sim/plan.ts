import { deriveSessionId, type SessionKey } from '../../lib/core/ids.ts';
import type { Rng } from './rng.ts';

/**
 * What the users of a run do: the sessions they start and the commands they send afterwards,
 * drawn from the seed before the run starts. The scheduler issues the commands in order, each
 * at a moment it picks, each as a client process of its own.
 */

export type AgentName = 'support-desk' | 'order-investigator' | 'long-haul' | 'dispatcher' | 'pay-desk';

export interface PlannedSession {
  /** s1, s2, …: how the trace and the report name it. */
  readonly name: string;
  readonly agent: AgentName;
  readonly ticketId: string;
  readonly key: SessionKey;
  readonly input: unknown;
  readonly conversation: boolean;
}

export type SendMode = 'queue' | 'steer' | 'inject';

/** Which turn a stop names: the running one, a queued one, or any turn of the session. */
export type StopPick = 'running' | 'queued' | 'any';

export type Command =
  | { readonly kind: 'submit'; readonly session: PlannedSession }
  /** The same ticket again, as a producer that never heard back sends it. */
  | { readonly kind: 'resubmit'; readonly session: PlannedSession }
  | {
      readonly kind: 'send';
      readonly session: PlannedSession;
      readonly id: string;
      readonly mode: SendMode;
      readonly input: unknown;
    }
  /** A further turn as a ticket on the tickets queue, through intake. */
  | { readonly kind: 'ticket-turn'; readonly session: PlannedSession; readonly id: string; readonly input: unknown }
  /**
   * A stop of one turn (the chat's stop): the session's running turn, one of its queued turns, or
   * any of its turns (ended ones too), picked when the command runs.
   */
  | { readonly kind: 'stop-turn'; readonly session: PlannedSession; readonly pick: StopPick }
  /** With `statusFirst`, the client reads status, then cancels: the two must agree. */
  | { readonly kind: 'cancel'; readonly session: PlannedSession; readonly statusFirst: boolean }
  | { readonly kind: 'release'; readonly session: PlannedSession; readonly timeoutS: number; readonly waitMs: number }
  | { readonly kind: 'approve'; readonly session: PlannedSession; readonly approved: boolean }
  | { readonly kind: 'resolve'; readonly session: PlannedSession }
  /** Nobody uses anything for a good part of the retention (the clock jumps, expired items go). */
  | { readonly kind: 'idle-gap'; readonly fraction: number };

/**
 * A run's emphasis (swarm testing): a mix of everything, or many once-only calls interrupted and
 * reconciled, or busy conversations under sends, cancels and releases. A narrow run reaches deep
 * states of its kind far more often than a run that spreads itself over all of them.
 */
export type Theme = 'mixed' | 'effects' | 'conversations';

export interface Plan {
  readonly theme: Theme;
  readonly sessions: readonly PlannedSession[];
  readonly commands: readonly Command[];
  /**
   * When each command may start, in virtual ms after the run's start: spread over the run, so
   * commands meet turns in every phase (starting, mid-step, finishing, idle), not only the first.
   */
  readonly at: readonly number[];
  /** For some commands: the moment to pounce on, once due (see Pounce); undefined: any moment. */
  readonly pounce: readonly (Pounce | undefined)[];
}

/**
 * A moment of a session's protocol worth aiming a command at, the way FoundationDB's buggify
 * aims faults: a turn ending (its result being published, its record about to move on), or the
 * session's leg reading its tasks (a release waiting for them, a wait, a model call's task status),
 * or the session's leg calling a once-only tool or reconciling one.
 */
export type Pounce = 'turn-end' | 'task-read' | 'effect';

const CONVERSATIONS: readonly AgentName[] = ['support-desk', 'dispatcher', 'pay-desk'];

const AGENT_WEIGHTS: Record<Theme, readonly (readonly [AgentName, number])[]> = {
  mixed: [
    ['support-desk', 4],
    ['order-investigator', 3],
    ['dispatcher', 2],
    ['long-haul', 2],
    ['pay-desk', 1],
  ],
  effects: [
    ['order-investigator', 5],
    ['dispatcher', 2],
    ['support-desk', 2],
    ['pay-desk', 1],
  ],
  conversations: [
    ['support-desk', 3],
    ['dispatcher', 3],
    ['pay-desk', 1],
  ],
};

/**
 * How likely each kind of command is, by theme (send, ticket-turn, resubmit, cancel, release,
 * approve, resolve, idle-gap). Stops of one turn are added afterwards from a stream of their own
 * (addStops), so the plans drawn before they existed stay as they were.
 */
const COMMAND_WEIGHTS: Record<Theme, Record<Exclude<Command['kind'], 'submit' | 'stop-turn'>, number>> = {
  mixed: { send: 6, 'ticket-turn': 2, resubmit: 1, cancel: 2, release: 1.5, approve: 2, resolve: 1, 'idle-gap': 1.2 },
  effects: { send: 3, 'ticket-turn': 1, resubmit: 1, cancel: 2, release: 0.5, approve: 3, resolve: 3, 'idle-gap': 0.3 },
  conversations: {
    send: 5,
    'ticket-turn': 2,
    resubmit: 0.5,
    cancel: 4,
    release: 3,
    approve: 1,
    resolve: 0.5,
    'idle-gap': 1,
  },
};

export function drawTheme(rng: Rng): Theme {
  return rng.weighted<Theme>([
    ['mixed', 6],
    ['effects', 2],
    ['conversations', 2],
  ]);
}

export function makePlan(rng: Rng, theme: Theme): Plan {
  const count = rng.int(1, 3);
  const sessions: PlannedSession[] = [];
  for (let i = 1; i <= count; i++) {
    const agent = rng.weighted<AgentName>(AGENT_WEIGHTS[theme]);
    const ticketId = `s${i}-${agent}`;
    sessions.push({
      name: `s${i}`,
      agent,
      ticketId,
      key: { tenant: 'default', agent, id: deriveSessionId('default', agent, ticketId) },
      input: firstInput(rng, agent),
      conversation: CONVERSATIONS.includes(agent),
    });
  }
  const commands: Command[] = sessions.map((session) => ({ kind: 'submit', session }));
  const conversations = sessions.filter((s) => s.conversation);
  let sent = 0;
  const more = rng.int(2, 10);
  for (let i = 0; i < more; i++) {
    const session = rng.pick(sessions);
    const w = COMMAND_WEIGHTS[theme];
    const kind = rng.weighted<Command['kind']>([
      ['send', conversations.length ? w.send : 0],
      ['ticket-turn', conversations.length ? w['ticket-turn'] : 0],
      ['resubmit', w.resubmit],
      ['cancel', w.cancel],
      ['release', conversations.length ? w.release : 0],
      ['approve', w.approve],
      ['resolve', w.resolve],
      ['idle-gap', conversations.length ? w['idle-gap'] : 0],
    ]);
    const conversation = conversations.length ? rng.pick(conversations) : session;
    switch (kind) {
      case 'send':
        commands.push({
          kind,
          session: conversation,
          id: `${conversation.name}-m${++sent}`,
          mode: rng.weighted<SendMode>([
            ['queue', 5],
            ['steer', 2],
            ['inject', 2],
          ]),
          input: turnInput(rng, conversation.agent),
        });
        break;
      case 'ticket-turn':
        commands.push({
          kind,
          session: conversation,
          id: `${conversation.name}-t${++sent}`,
          input: turnInput(rng, conversation.agent),
        });
        break;
      case 'cancel':
        commands.push({ kind, session, statusFirst: rng.chance(0.5) });
        break;
      case 'release':
        commands.push({ kind, session: conversation, timeoutS: rng.int(1, 5), waitMs: rng.int(1, 8) * 1000 });
        // A cancel close behind a release meets it while it waits for its tasks.
        if (rng.chance(0.3)) commands.push({ kind: 'cancel', session: conversation, statusFirst: false });
        break;
      case 'approve':
        commands.push({ kind, session, approved: rng.chance(0.75) });
        break;
      case 'idle-gap':
        commands.push({ kind, fraction: rng.pick([0.3, 0.45, 0.55, 0.7, 0.9]) + rng.float() * 0.1 });
        break;
      default:
        commands.push({ kind, session } as Command);
    }
  }
  const at: number[] = [];
  let time = 0;
  commands.forEach((command, i) => {
    if (command.kind === 'submit') at.push(rng.int(0, 500));
    else {
      // Mostly a few seconds apart, sometimes in a burst; a cancel right behind a release, closely.
      const behindRelease = command.kind === 'cancel' && commands[i - 1]?.kind === 'release';
      time += behindRelease || rng.chance(0.25) ? rng.int(0, 300) : rng.int(300, 6_000);
      at.push(time);
    }
  });
  const pounce = commands.map((command, i): Pounce | undefined => {
    if (command.kind !== 'cancel' && command.kind !== 'release') return undefined;
    const dispatcher = command.session.agent === 'dispatcher';
    // A cancel right behind a dispatcher's release aims at the release's wait for its tasks.
    if (command.kind === 'cancel' && dispatcher && commands[i - 1]?.kind === 'release') return 'task-read';
    if (!rng.chance(0.5)) return undefined;
    if (dispatcher && rng.chance(0.5)) return 'task-read';
    return command.kind === 'cancel' && rng.chance(0.3) ? 'effect' : 'turn-end';
  });
  return { theme, sessions, commands, at, pounce };
}

/** How likely a run is to have stops of one turn, and their theme's weight of more of them. */
const STOP_RUNS: Record<Theme, number> = { mixed: 0.5, effects: 0.4, conversations: 0.7 };

/**
 * Adds stops of one turn (the chat's stop) to a plan, drawn from `rng` alone: half the runs or so
 * get one to three, each between two of the plan's commands (a moment in between), naming the
 * running turn, a queued one or any turn when it runs, some aimed at a turn's end or a once-only
 * call; after about half of them the chat's next message follows. A plan without stops is the
 * plan as drawn before stops existed, so its seed replays as it did.
 */
export function addStops(plan: Plan, rng: Rng): Plan {
  if (!rng.chance(STOP_RUNS[plan.theme])) return plan;
  const commands = [...plan.commands];
  const at = [...plan.at];
  const pounce = [...plan.pounce];
  const conversations = plan.sessions.filter((s) => s.conversation);
  const count = rng.int(1, 3);
  for (let i = 0; i < count; i++) {
    // Mostly a conversation's turn; sometimes a one-shot session's only turn.
    const session = conversations.length && rng.chance(0.85) ? rng.pick(conversations) : rng.pick(plan.sessions);
    const pick = rng.weighted<StopPick>([
      ['running', 5],
      ['queued', 2],
      ['any', 2],
    ]);
    // After the sessions' submits, at a moment between two commands (times never go backwards).
    const first = plan.sessions.length;
    const place = rng.int(first, commands.length);
    const from = at[place - 1] ?? 0;
    const to = at[place] ?? from + 6_000;
    const when = from + rng.int(0, Math.max(0, to - from));
    const added: Command[] = [{ kind: 'stop-turn', session, pick }];
    // A stop aims at a turn's end (it races the publish) or at a once-only call in flight.
    const aims: (Pounce | undefined)[] = [rng.chance(0.4) ? (rng.chance(0.6) ? 'turn-end' : 'effect') : undefined];
    // As a chat does after its stop: the next message, a new turn.
    if (session.conversation && rng.chance(0.5)) {
      added.push({
        kind: 'send',
        session,
        id: `${session.name}-x${i + 1}`,
        mode: 'queue',
        input: turnInput(rng, session.agent),
      });
      aims.push(undefined);
    }
    commands.splice(place, 0, ...added);
    at.splice(place, 0, ...added.map(() => when));
    pounce.splice(place, 0, ...aims);
  }
  return { ...plan, commands, at, pounce };
}

function firstInput(rng: Rng, agent: AgentName): unknown {
  switch (agent) {
    case 'order-investigator':
      return { orderId: `O-${rng.int(1, 40)}`, complaint: 'my parcel never came' };
    case 'long-haul':
      return { steps: rng.int(1, 8), payloadBytes: 64, stepMs: rng.pick([0, 500, 1_500, 2_000]) };
    default:
      return turnInput(rng, agent);
  }
}

function turnInput(rng: Rng, agent: AgentName): unknown {
  switch (agent) {
    case 'support-desk':
      return {
        text: rng.weighted([
          [`hello ${rng.int(1, 99)}`, 2],
          [`refund O-${rng.int(1, 40)}`, 3],
          [`work ${rng.int(1, 3)}`, 2],
          [`remind me in ${rng.int(1, 90)} s`, 1],
        ]),
      };
    case 'pay-desk':
      return { text: `pay ${rng.int(1, 9)} then ${rng.int(10, 9_999)}` };
    case 'dispatcher': {
      const tasks = Array.from({ length: rng.int(1, 2) }, (_, i) => taskInput(rng, i));
      return { tasks };
    }
    default:
      return firstInput(rng, agent);
  }
}

function taskInput(rng: Rng, i: number) {
  const agent = rng.weighted([
    ['long-haul', 2],
    ['order-investigator', 2],
    ['support-desk', 1],
  ] as const);
  const input =
    agent === 'long-haul'
      ? { steps: rng.int(1, 4), payloadBytes: 32, stepMs: rng.pick([0, 1_000]) }
      : agent === 'order-investigator'
        ? { orderId: `O-${rng.int(1, 40)}`, complaint: 'late' }
        : { text: `hello ${rng.int(1, 9)}` };
  return { agent, input, description: `task ${i + 1}` };
}
