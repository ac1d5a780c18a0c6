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

export type Command =
  | { readonly kind: 'submit'; readonly session: PlannedSession }
  /** The same ticket again, as a producer that never heard back sends it. */
  | { readonly kind: 'resubmit'; readonly session: PlannedSession }
  | { readonly kind: 'send'; readonly session: PlannedSession; readonly id: string; readonly mode: SendMode; readonly input: unknown }
  /** A further turn as a ticket on the tickets queue, through intake. */
  | { readonly kind: 'ticket-turn'; readonly session: PlannedSession; readonly id: string; readonly input: unknown }
  /** With `statusFirst`, the client reads status, then cancels: the two must agree. */
  | { readonly kind: 'cancel'; readonly session: PlannedSession; readonly statusFirst: boolean }
  | { readonly kind: 'release'; readonly session: PlannedSession; readonly timeoutS: number; readonly waitMs: number }
  | { readonly kind: 'approve'; readonly session: PlannedSession; readonly approved: boolean }
  | { readonly kind: 'resolve'; readonly session: PlannedSession }
  /** Nobody uses anything for a good part of the retention (the clock jumps, expired items go). */
  | { readonly kind: 'idle-gap'; readonly fraction: number };

export interface Plan {
  readonly sessions: readonly PlannedSession[];
  readonly commands: readonly Command[];
}

const CONVERSATIONS: readonly AgentName[] = ['support-desk', 'dispatcher', 'pay-desk'];

export function makePlan(rng: Rng): Plan {
  const count = rng.int(1, 3);
  const sessions: PlannedSession[] = [];
  for (let i = 1; i <= count; i++) {
    const agent = rng.weighted<AgentName>([
      ['support-desk', 4],
      ['order-investigator', 3],
      ['dispatcher', 2],
      ['long-haul', 2],
      ['pay-desk', 1],
    ]);
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
    const kind = rng.weighted<Command['kind']>([
      ['send', conversations.length ? 6 : 0],
      ['ticket-turn', conversations.length ? 2 : 0],
      ['resubmit', 1],
      ['cancel', 2],
      ['release', conversations.length ? 1.5 : 0],
      ['approve', 2],
      ['resolve', 1],
      ['idle-gap', conversations.length ? 0.8 : 0],
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
        commands.push({ kind, session: conversation, id: `${conversation.name}-t${++sent}`, input: turnInput(rng, conversation.agent) });
        break;
      case 'cancel':
        commands.push({ kind, session, statusFirst: rng.chance(0.5) });
        break;
      case 'release':
        commands.push({ kind, session: conversation, timeoutS: rng.int(1, 5), waitMs: rng.int(1, 8) * 1000 });
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
  return { sessions, commands };
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
