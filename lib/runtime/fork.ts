import { randomUUID } from 'node:crypto';
import { agentAtVersion } from '../agent/agent-versions.ts';
import type { AgentRegistry } from '../agent/define-agent.ts';
import { GoneError, InvalidInputError, SeqTakenError } from '../core/errors.ts';
import { planFork, turnStartOf } from '../core/fork.ts';
import { deriveSessionId, hashJson, type SessionKey } from '../core/ids.ts';
import { JOURNAL_FORMAT_VERSION } from '../core/journal.ts';
import { TicketId } from '../core/messages.ts';
import { childContext, newTraceId } from '../core/trace-context.ts';
import { ForkEffects } from '../core/vocabulary.ts';
import type { Clock } from '../ports/clock.ts';
import type { WorkQueue } from '../ports/queues.ts';
import type { ForkOrigin, SessionRecord, SessionStore, TurnRecord } from '../ports/session-store.ts';
import { recordTtlAfter, sessionItemTtlSeconds } from './expiry.ts';
import { inlineInput } from './turn-intake.ts';

/**
 * Makes a fork: a new session whose history is the original's journal up to a cursor. It writes
 * O(1) items whatever the prefix — the fork's turn, its `forked` entry at `cursor + 1` (which
 * names the original and lists the once-only calls the original made after the cursor) and its
 * record — then kicks it. The prefix is read from the original's partition, never copied
 * (lib/adapters/fork-journal.ts). Retention: the fork's record starts with its origin's item
 * floor (`expiryRefreshedAt`, `retentionS`), so the fork's first leg that would outlive it moves
 * the items of every session in its chain forward with its own (lib/runtime/leg/item-expiry.ts):
 * the original's retention never cuts a live fork's history short.
 */

export interface ForkDeps {
  readonly store: SessionStore;
  readonly workQueue: WorkQueue;
  readonly clock: Clock;
  /** When the sweeper kicks the fork should its first kick be lost. */
  readonly sweepGraceMs: number;
  /** The deployment's agents: a fork asked to run on a version needs them to check that it exists. */
  readonly agents?: AgentRegistry | undefined;
}

export interface ForkRequest {
  readonly original: SessionRecord;
  /** The last seq of the original the fork keeps. */
  readonly cursor: number;
  /** A new turn at the cursor (a turn boundary); without it the fork continues the turn the cursor is inside. */
  readonly input?: unknown;
  /** The fork's ticket id (its session id derives from it): a fork made again with the same id converges. */
  readonly ticketId?: string | undefined;
  readonly effects?: ForkEffects | undefined;
  /**
   * The agent version the fork runs on, for good (its `forked` entry pins it, and its record
   * indexes it); without it the fork goes on as its original would have, under the upgrade policy.
   */
  readonly version?: number | undefined;
}

export interface Forked {
  readonly sessionId: string;
  readonly tenant: string;
  readonly agent: string;
  readonly ticketId: string;
  /** The turn the fork runs first: its new input's, or the original's turn it continues. */
  readonly turnId: string;
  readonly forkedFrom: { readonly session: string; readonly cursor: number };
  readonly effects: ForkEffects;
  /** The agent version the fork was made to run on, when one was asked for. */
  readonly version?: number | undefined;
  /** Once-only calls the original made after the cursor: what a repeat in the fork is checked against. */
  readonly repeatable: number;
  /** False when a fork with this id existed already (nothing was written). */
  readonly created: boolean;
}

/** The cursor and input of `rerun --turn T`: a fork at the start of turn T with T's input. */
export async function rerunPoint(
  store: SessionStore,
  original: SessionRecord,
  turnId: string,
): Promise<{ cursor: number; input: unknown }> {
  return turnStartOf(await store.readJournal(original.key), original.key.id, turnId);
}

/** Creates the fork (see above). Throws InvalidInputError naming what is wrong, before writing anything. */
export async function forkSession(deps: ForkDeps, request: ForkRequest): Promise<Forked> {
  const { original, cursor } = request;
  const now = deps.clock.now();
  const effects = request.effects ?? ForkEffects.ask;
  if (!Object.values(ForkEffects).includes(effects))
    throw new InvalidInputError(
      `fork effects must be one of ${Object.values(ForkEffects).join(', ')}, got '${effects}'`,
    );
  if (original.expiresAt !== undefined && original.expiresAt <= now)
    throw new GoneError(`session ${original.key.id} is past its retention`);
  // The fork's id names its session as a ticket id does: checked as strictly, or two ids could share one.
  const id = request.ticketId === undefined ? undefined : TicketId.safeParse(request.ticketId);
  if (id?.success === false)
    throw new InvalidInputError(`fork id: ${id.error.issues.map((issue) => issue.message).join('; ')}`);
  const { version } = request;
  if (version !== undefined) {
    if (deps.agents === undefined)
      throw new InvalidInputError(
        `a fork on agent version ${version} needs the deployment's agents to check it exists: fork through the API or on the local stack`,
      );
    agentAtVersion(deps.agents, original.key.agent, version);
  }
  const withInput = request.input !== undefined;
  const entries = await deps.store.readJournal(original.key);
  const point = planFork(entries, {
    sessionId: original.key.id,
    cursor,
    withInput,
    conversation: original.conversation,
  });
  const ticketId = request.ticketId ?? `fork-${randomUUID()}`;
  const origin: ForkOrigin = {
    key: original.key,
    cursor,
    chain: [original.key, ...(original.forkedFrom?.chain ?? [])],
  };
  const key: SessionKey = { ...original.key, id: deriveSessionId(original.key.tenant, original.key.agent, ticketId) };
  if (origin.chain.some((k) => k.id === key.id))
    throw new InvalidInputError(`fork id ${ticketId} names session ${key.id}, which the fork's own history reads`);
  const turn = withInput ? newTurn(ticketId, request.input, now) : await continuedTurn(deps.store, original, point);
  const itemTtl = sessionItemTtlSeconds(original, now);
  const recordTtl =
    original.retentionS !== undefined
      ? recordTtlAfter(original.retentionS, now)
      : original.expiresAt === undefined
        ? undefined
        : Math.ceil(original.expiresAt / 1000);
  // Above every epoch of the history: the fork's first acquire then fences above all of it.
  const epoch = Math.max(original.epoch, point.view.legEpoch, 1);

  const put = await deps.store.putTurn(key, turn, itemTtl);
  if (!put.created && put.turn.inputHash !== turn.inputHash)
    throw new InvalidInputError(`fork id ${ticketId} was used before for another fork`);
  try {
    await deps.store.append(
      key,
      {
        kind: 'forked',
        seq: cursor + 1,
        epoch,
        writeId: `fork:${ticketId}`,
        at: now,
        turnId: turn.turnId,
        // A worker of an older format leaves the fork to a newer one rather than fail it.
        v: JOURNAL_FORMAT_VERSION,
        data: {
          from: { agent: original.key.agent, id: original.key.id },
          cursor,
          effects,
          ledger: point.ledger,
          ...(version === undefined ? {} : { version }),
        },
      },
      itemTtl,
    );
  } catch (error) {
    if (!(error instanceof SeqTakenError)) throw error;
    // The same fork made again converges; another fork under this id is refused.
    const [found] = await deps.store.readJournal(key, cursor, { limit: 1 });
    if (
      found?.kind !== 'forked' ||
      found.data.from.id !== original.key.id ||
      found.data.effects !== effects ||
      found.data.version !== version
    )
      throw new InvalidInputError(`fork id ${ticketId} was used before for another fork`);
  }
  const traceId = newTraceId();
  const created = await deps.store.createSession({
    key,
    ticketId,
    activeTurnId: turn.turnId,
    activeInput: withInput ? inlineInput(turn.turnId, turn.input) : undefined,
    traceId,
    now,
    sweepAt: now + deps.sweepGraceMs,
    ttlSeconds: recordTtl,
    retentionS: original.retentionS,
    conversation: original.conversation,
    fork: { origin, epoch },
    // The record indexes what `baton versions` counts; the journal's `forked` entry decides.
    agentVersion: version ?? point.view.agentVersion ?? original.agentVersion,
    journalFormat: JOURNAL_FORMAT_VERSION,
    // The fork's history lives as long as its origin's items: the fork starts from their floor.
    expiryRefreshedAt: original.expiryRefreshedAt ?? original.createdAt,
  });
  if (created.created || created.record.state === 'queued')
    await deps.workQueue.sendKick(
      { v: 1, session: key, reason: 'first', turnId: turn.turnId },
      { trace: childContext(created.record.traceId) },
    );
  return {
    sessionId: key.id,
    tenant: key.tenant,
    agent: key.agent,
    ticketId,
    turnId: turn.turnId,
    forkedFrom: { session: original.key.id, cursor },
    effects,
    ...(version === undefined ? {} : { version }),
    repeatable: point.ledger.length,
    created: created.created,
  };
}

const newTurn = (ticketId: string, input: unknown, now: number): TurnRecord => ({
  turnId: ticketId,
  ticketId,
  input,
  inputHash: hashJson(input),
  createdAt: now,
});

/** The original's turn the cursor is inside, without its outcome: the fork finishes it its own way. */
async function continuedTurn(
  store: SessionStore,
  original: SessionRecord,
  point: { continuesTurn?: string | undefined },
): Promise<TurnRecord> {
  const turnId = point.continuesTurn!;
  const turn = await store.getTurn(original.key, turnId);
  if (!turn) throw new GoneError(`session ${original.key.id} no longer has turn ${turnId}`);
  return {
    turnId: turn.turnId,
    ticketId: turn.ticketId,
    input: turn.input,
    inputHash: turn.inputHash,
    createdAt: turn.createdAt,
  };
}
