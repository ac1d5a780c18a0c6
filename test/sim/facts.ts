import type { SessionKey } from '../../lib/core/ids.ts';

/**
 * What the users of a run were told: each promise the system made them (a turn accepted, a
 * cancel requested, a release asked for, an approval given), recorded only once the call that
 * made it returned to its caller. The invariants hold the system to these.
 */

export interface AcceptedTurn {
  readonly key: SessionKey;
  readonly turnId: string;
  /** How it came in: intake (a ticket), send (the client). */
  readonly via: string;
}

export interface Approval {
  readonly sessionId: string;
  readonly callId: string;
  readonly digest: string;
  readonly approved: boolean;
}

export interface Violation {
  readonly invariant: string;
  readonly detail: string;
}

export class Facts {
  readonly turns = new Map<string, AcceptedTurn>();
  /** Turns a send was refused for (the refusal was the answer; no result is owed). */
  readonly refusedTurns = new Set<string>();
  /** Every turn id a client tried to send: one never acknowledged was promised nothing (its sender retries). */
  readonly sentTurns = new Set<string>();
  readonly cancels: SessionKey[] = [];
  readonly releases: { key: SessionKey; released: boolean }[] = [];
  readonly approvals: Approval[] = [];
  /** Questions a human (the operator) answered: an approval request or a parked call, by its identity. */
  readonly answered = new Set<string>();
  /** Sessions whose items expired for good (finished, past their retention) after a check saw them settled. */
  readonly retired = new Set<string>();
  /** Turns a check saw settled before their session's items expired. */
  readonly verified = new Set<string>();
  readonly violations: Violation[] = [];
  readonly #seen = new Set<string>();

  acceptTurn(key: SessionKey, turnId: string, via: string): void {
    const id = `${key.id}/${turnId}`;
    if (!this.turns.has(id)) this.turns.set(id, { key, turnId, via });
  }

  violate(invariant: string, detail: string): void {
    const id = `${invariant}: ${detail}`;
    if (this.#seen.has(id)) return;
    this.#seen.add(id);
    this.violations.push({ invariant, detail });
  }
}
