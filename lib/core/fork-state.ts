import type { CallIdentity } from './call-identity.ts';
import type { EntryDataOf, OriginalEffect } from './journal.ts';
import type { ForkEffects } from './vocabulary.ts';

/** What the fold keeps of the latest `forked` entry: the fork's effects and which original calls were answered. */
export interface ForkState {
  readonly from: { readonly agent: string; readonly id: string };
  readonly cursor: number;
  readonly effects: ForkEffects;
  readonly ledger: readonly OriginalEffect[];
  /** The agent version the fork was made to run on (`fork --version`): it keeps it, whatever the upgrade policy. */
  readonly version?: number | undefined;
  /** Original calls (by their watermark's seq) already answered in the fork, with the call that answered: `modelSeq:callId`. */
  readonly used: Readonly<Record<number, string>>;
}

/** The fork state a `forked` entry starts: nothing answered yet. */
export const forkStateOf = (data: EntryDataOf<'forked'>): ForkState => ({
  from: data.from,
  cursor: data.cursor,
  effects: data.effects,
  ledger: data.ledger,
  ...(data.version === undefined ? {} : { version: data.version }),
  used: {},
});

/** The fork state with the original call at `seq` answered by the call `modelSeq:callId`. */
export const markUsed = (fork: ForkState, seq: number, modelSeq: number, callId: string): ForkState => ({
  ...fork,
  used: { ...fork.used, [seq]: `${modelSeq}:${callId}` },
});

/**
 * What a once-only call of a fork needs before it runs. `run`: nothing (not a fork, or effects
 * `rerun`: the fork's own session id already gives it a key of its own). `repeat`: the original
 * made this call after the fork point; the effects say what happens. `new`: a once-only call the
 * original did not make after the fork point: it needs an approval.
 */
export type ForkEffectPlan =
  | { readonly kind: 'run' }
  | { readonly kind: 'repeat'; readonly effects: ForkEffects; readonly original: OriginalEffect }
  | { readonly kind: 'new' };

/**
 * The plan for a once-only call of a fork. An original call answers one fork call: the one that
 * answered it before (a call asked again after its approval, say) or, failing that, the first
 * unanswered original call with the same tool and digest, in the original's order.
 */
export function forkEffectOf(fork: ForkState | undefined, call: CallIdentity): ForkEffectPlan {
  if (fork === undefined || fork.effects === 'rerun') return { kind: 'run' };
  const ref = `${call.modelSeq}:${call.callId}`;
  const answered = fork.ledger.find((o) => fork.used[o.seq] === ref);
  const original =
    answered ??
    fork.ledger.find(
      (o) =>
        fork.used[o.seq] === undefined && o.tool === call.tool && o.digest !== undefined && o.digest === call.digest,
    );
  return original ? { kind: 'repeat', effects: fork.effects, original } : { kind: 'new' };
}
