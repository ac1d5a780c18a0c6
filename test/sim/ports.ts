import type { SessionKey } from '../../lib/core/ids.ts';
import type { SessionStore, TurnRead } from '../../lib/ports/session-store.ts';
import { lostResponseError, throttleError } from './faults.ts';
import type { GateFault, OpKind, Scheduler } from './scheduler.ts';

/**
 * The session store as the simulated world sees it: the real in-memory store behind a gate on
 * every call. Once its gate opens, a call runs atomically (the memory store applies each write in
 * one synchronous step), then meets the fault the seed chose for it, shaped like the AWS SDK's.
 */

const STORE_OPS: Record<keyof SessionStore, OpKind> = {
  createSession: 'write',
  getSession: 'read',
  getSessions: 'read',
  putTurn: 'write',
  getTurn: 'read',
  getTurns: 'read',
  setTurnOutcome: 'write',
  listTurns: 'read',
  enqueueTurn: 'write',
  endTurn: 'write',
  advanceTurn: 'write',
  postInbox: 'write',
  takeInbox: 'write',
  acquire: 'write',
  renew: 'write',
  release: 'write',
  bump: 'write',
  refreshExpiry: 'write',
  append: 'write',
  readJournal: 'read',
  putSnapshot: 'write',
  getLatestSnapshot: 'read',
  findDue: 'read',
  findSession: 'read',
  listSessions: 'read',
  querySessions: 'read',
};

/** Runs one call under a fault: a throttle refuses it; a lost response commits it, then fails; a retry commits it twice. */
export async function underFault<T>(fault: GateFault | undefined, call: () => Promise<T>): Promise<T> {
  switch (fault) {
    case 'throttle':
      throw throttleError();
    case 'lost-response':
      await call();
      throw lostResponseError();
    case 'retried':
      await call();
      return call();
    default:
      return call();
  }
}

/**
 * The sweeper's index query runs every second of virtual time; it changes nothing, and what it
 * finds only matters through the kicks it sends, which are gated. Gating it would cost a scheduler
 * step per shard per second for no interleaving that matters.
 */
const UNGATED: ReadonlySet<string> = new Set(['findDue']);

/** The store behind gates: every method of the SessionStore port waits for the seed, then runs. */
export function gatedStore(real: SessionStore, sim: Scheduler): SessionStore {
  const gated = {} as Record<string, unknown>;
  for (const [name, kind] of Object.entries(STORE_OPS)) {
    const method = (real as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>)[name]!.bind(real);
    if (UNGATED.has(name)) {
      gated[name] = method;
      continue;
    }
    gated[name] = async (...args: unknown[]) => {
      const fault = await sim.gate(`store.${name}${describe(args)}`, kind);
      return underFault(fault, () => method(...args));
    };
  }
  // A batch read is one request, but not a snapshot: DynamoDB reads each item on its own, so the
  // world gates (and may fault, or interleave) each item as the single read it stands for.
  const store = gated as unknown as SessionStore;
  gated.getSessions = (keys: readonly SessionKey[]) => Promise.all(keys.map((key) => store.getSession(key)));
  gated.getTurns = (reads: readonly TurnRead[]) => Promise.all(reads.map((r) => store.getTurn(r.key, r.turnId)));
  return store;
}

/** A short, stable description of a call's subject for the trace: the session's id and the seq or turn. */
function describe(args: readonly unknown[]): string {
  const key = args[0] as { id?: unknown } | undefined;
  if (key && typeof key === 'object' && typeof key.id === 'string') {
    const second = args[1] as { seq?: unknown; kind?: unknown } | string | undefined;
    const detail =
      typeof second === 'string'
        ? ` ${second}`
        : second && typeof second === 'object' && typeof second.seq === 'number'
          ? ` #${second.seq} ${String(second.kind)}`
          : '';
    return `(${key.id.slice(0, 6)}${detail})`;
  }
  return '';
}
