import type { AnyTool } from '../agent/define-tool.ts';
import type { SessionKey } from '../core/ids.ts';
import type { SessionStore } from '../ports/session-store.ts';

/** A completed step that ran again, or a once-only call that ran more often than it was allowed. */
export interface RanTwice {
  readonly sessionId: string;
  readonly tool: string;
  readonly callId: string;
  readonly detail: string;
}

/** Thrown by a harness action when a tool call ran again that must not have (after a crash, most likely). */
export class RanTwiceError extends Error {
  constructor(readonly violations: readonly RanTwice[]) {
    super(`a step ran twice:\n${violations.map((v) => `  session ${v.sessionId}: ${v.detail}`).join('\n')}`);
    this.name = 'RanTwiceError';
  }
}

/**
 * Every tool execution, checked against the journal as it starts: a call whose result the
 * journal already holds must never run again (completed steps never run again), and a once-only
 * call runs again only after a verdict said it had not happened (`notDone`).
 */
export class StepLedger {
  readonly #runs = new Map<string, number>();
  #violations: RanTwice[] = [];

  constructor(private readonly store: SessionStore) {}

  /** How many times each idempotency key ran. */
  runsOf(idempotencyKey: string): number {
    return this.#runs.get(idempotencyKey) ?? 0;
  }

  /** Records one execution of `tool` in `session`, checking it against what the journal holds now. */
  async record(session: SessionKey, tool: AnyTool, idempotencyKey: string): Promise<void> {
    const before = this.runsOf(idempotencyKey);
    this.#runs.set(idempotencyKey, before + 1);
    const call = parseKey(session, idempotencyKey);
    if (call === undefined) return;
    // The calls of one model entry are answered before the next model entry: read up to it.
    const entries = await this.store.readJournal(session, call.modelSeq);
    const next = entries.findIndex((e) => e.kind === 'model');
    const step = next < 0 ? entries : entries.slice(0, next);
    const answered = step.find(
      (e) =>
        (e.kind === 'tool' && e.data.callId === call.callId) ||
        (e.kind === 'reconciled' && e.data.callId === call.callId && e.data.verdict === 'done'),
    );
    const violation = (detail: string) =>
      this.#violations.push({ sessionId: session.id, tool: tool.name, callId: call.callId, detail });
    if (answered)
      violation(
        `tool ${tool.name} (call ${call.callId}) ran again after its result was journaled at seq ${answered.seq}`,
      );
    else if (tool.effect === 'once') {
      const voided = step.filter(
        (e) => e.kind === 'reconciled' && e.data.callId === call.callId && e.data.verdict === 'notDone',
      ).length;
      if (before > voided)
        violation(
          `once-only tool ${tool.name} (call ${call.callId}) ran ${before + 1} times with ${voided} verdict(s) that it had not happened`,
        );
    }
  }

  /** The violations seen since the last call, cleared. */
  take(): RanTwice[] {
    const taken = this.#violations;
    this.#violations = [];
    return taken;
  }
}

/** The model entry's seq and the call id in an idempotency key (lib/core/ids.ts idempotencyKey). */
function parseKey(session: SessionKey, key: string): { modelSeq: number; callId: string } | undefined {
  const prefix = `${session.tenant}:${session.agent}:${session.id}:`;
  if (!key.startsWith(prefix)) return undefined;
  const rest = key.slice(prefix.length);
  const colon = rest.indexOf(':');
  const modelSeq = Number(rest.slice(0, colon));
  if (colon < 0 || !Number.isInteger(modelSeq)) return undefined;
  return { modelSeq, callId: rest.slice(colon + 1) };
}
