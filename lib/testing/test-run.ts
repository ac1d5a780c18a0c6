import type { SessionEvent, SessionStatus, StopTurnResult } from '../client/baton-client.ts';
import type { CallIdentity } from '../core/call-identity.ts';
import type { SessionKey } from '../core/ids.ts';
import type { JournalEntry } from '../core/journal.ts';
import type { ChatMessage } from '../ports/model-client.ts';
import type { TurnOutcome } from '../ports/session-store.ts';
import type { SendToOptions, TestBaton } from './test-baton.ts';

/** A turn started through the harness: its session and turn, and the harness's actions on them. */
export class TestRun {
  constructor(
    private readonly baton: TestBaton,
    readonly key: SessionKey,
    readonly turnId: string,
  ) {}

  get sessionId(): string {
    return this.key.id;
  }

  /** This turn's outcome; undefined while it has none. */
  outcome(): Promise<TurnOutcome | undefined> {
    return this.baton.outcome(this.sessionId, this.turnId);
  }

  /** This turn's output; throws naming the status (and error) when it did not complete. */
  async output<T = unknown>(): Promise<T> {
    const outcome = await this.outcome();
    if (outcome?.status === 'completed') return outcome.output as T;
    if (outcome === undefined) {
      const status = await this.baton.status(this.sessionId);
      throw new Error(
        `turn ${this.turnId} of session ${this.sessionId} has not ended: the session is ${status.status}`,
      );
    }
    throw new Error(
      `turn ${this.turnId} of session ${this.sessionId} ended ${outcome.status}${outcome.error ? `: ${outcome.error}` : ''}`,
    );
  }

  status(): Promise<SessionStatus> {
    return this.baton.status(this.sessionId);
  }

  transcript(): Promise<ChatMessage[]> {
    return this.baton.transcript(this.sessionId);
  }

  /** The session's journal entries, in seq order. */
  journal(): Promise<JournalEntry[]> {
    return this.baton.journal(this.sessionId);
  }

  /** This turn's events. */
  events(): Promise<SessionEvent[]> {
    return this.baton.events(this.sessionId, { turnId: this.turnId });
  }

  /** The next turn of this conversation. */
  send(input: unknown, options?: SendToOptions): Promise<TestRun> {
    return this.baton.send(this.sessionId, input, options);
  }

  approve(callId?: string, reason?: string): Promise<CallIdentity> {
    return this.baton.approve(this.sessionId, callId, reason);
  }

  deny(callId?: string, reason?: string): Promise<CallIdentity> {
    return this.baton.deny(this.sessionId, callId, reason);
  }

  cancel(): Promise<'requested' | 'already-finished' | 'not-found'> {
    return this.baton.cancel(this.sessionId);
  }

  /** Stops this turn alone: it ends `cancelled` and the conversation goes on. */
  stop(): Promise<StopTurnResult> {
    return this.baton.stopTurn(this.sessionId, this.turnId);
  }
}
