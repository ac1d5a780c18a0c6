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
  /**
   * Stops of one turn, by `session/turn`: how many were asked for (counted before the call, since
   * one whose answer was lost may still have landed) and the answers that came back.
   */
  readonly stops = new Map<string, { asked: number; answers: string[] }>();
  readonly releases: { key: SessionKey; released: boolean }[] = [];
  readonly approvals: Approval[] = [];
  /** Questions a human (the operator) answered: an approval request or a parked call, by its identity. */
  readonly answered = new Set<string>();
  /** Sessions whose items expired for good (finished, past their retention) after a check saw them settled. */
  readonly retired = new Set<string>();
  /** Turns a check saw settled before their session's items expired. */
  readonly verified = new Set<string>();
  /**
   * Sessions whose every item expired, with how many executions and published results the world
   * had then. A ticket id sent anew after that starts a new run of the same session id (the store
   * remembers nothing for a retention); the checks hold each run to its promises on its own.
   */
  readonly expiredRuns = new Map<string, { executions: number; results: number }>();
  readonly violations: Violation[] = [];
  readonly #seen = new Set<string>();

  acceptTurn(key: SessionKey, turnId: string, via: string): void {
    const id = `${key.id}/${turnId}`;
    if (!this.turns.has(id)) this.turns.set(id, { key, turnId, via });
  }

  askStop(id: string): void {
    const stop = this.stops.get(id) ?? { asked: 0, answers: [] };
    stop.asked++;
    this.stops.set(id, stop);
  }

  answerStop(id: string, answer: string): void {
    this.stops.get(id)?.answers.push(answer);
  }

  /** Every item of the session expired: what users were told about its last run is settled and forgotten. */
  forgetRun(sessionId: string, cut: { executions: number; results: number }): void {
    this.expiredRuns.set(sessionId, cut);
    for (const id of [...this.turns.keys()])
      if (id.startsWith(`${sessionId}/`)) {
        this.turns.delete(id);
        this.verified.delete(id);
      }
    for (const id of [...this.stops.keys()]) if (id.startsWith(`${sessionId}/`)) this.stops.delete(id);
    const others = (keys: SessionKey[]) => keys.filter((k) => k.id !== sessionId);
    this.cancels.splice(0, this.cancels.length, ...others(this.cancels));
    const releases = this.releases.filter((r) => r.key.id !== sessionId);
    this.releases.splice(0, this.releases.length, ...releases);
    const approvals = this.approvals.filter((a) => a.sessionId !== sessionId);
    this.approvals.splice(0, this.approvals.length, ...approvals);
    for (const question of [...this.answered]) if (question.includes(` ${sessionId} `)) this.answered.delete(question);
  }

  /** Was this execution or result (by its index) part of a run of the session that has since expired? */
  beforeExpiry(sessionId: string, index: number, kind: 'executions' | 'results'): boolean {
    const cut = this.expiredRuns.get(sessionId);
    return cut !== undefined && index < cut[kind];
  }

  violate(invariant: string, detail: string): void {
    const id = `${invariant}: ${detail}`;
    if (this.#seen.has(id)) return;
    this.#seen.add(id);
    this.violations.push({ invariant, detail });
  }
}
