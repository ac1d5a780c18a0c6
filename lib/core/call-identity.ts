/**
 * What a human's decision or an operator's verdict names: one call in the journal and the input
 * it runs with. A model chooses call ids (and may reuse one later in the turn), so the id alone
 * names nothing: the model entry's seq places the call, the tool and the digest of its parsed
 * input say what would run (DESIGN.md invariant 12).
 *
 * No zod here: the HTTP client and the CLI's session commands use these helpers; the stored
 * fields' schema is call-identity-fields.ts.
 */
export interface CallIdentity {
  /** Seq of the model entry that asked for the call. */
  readonly modelSeq: number;
  readonly callId: string;
  readonly tool: string;
  /** `inputDigest` of the parsed input; absent only on entries journaled before digests existed. */
  readonly digest?: string | undefined;
}

/**
 * How a caller or an item names a call: its id, and any of the other fields. A caller that names
 * the id alone gets the call that waits with that id when it asks (the client then sends its whole
 * identity); an item must name all of them.
 */
export interface CallRef {
  readonly callId: string;
  readonly modelSeq?: number | undefined;
  readonly tool?: string | undefined;
  readonly digest?: string | undefined;
}

/** Whether `b` names exactly the call `a` is, with the same input. */
export const sameCall = (a: CallIdentity, b: CallRef): boolean =>
  a.modelSeq === b.modelSeq && a.callId === b.callId && a.tool === b.tool && a.digest === b.digest;

/** A call of the journal by its place alone: decisions are kept under it. */
export const callKey = (call: { readonly modelSeq: number; readonly callId: string }): string =>
  `${call.modelSeq}:${call.callId}`;

/** A caller's reference by its fields alone (an id alone names the call that waits with it). */
export function callRef(call: string | CallRef): CallRef {
  if (typeof call === 'string') return { callId: call };
  const { callId, modelSeq, tool, digest } = call;
  return {
    callId,
    ...(modelSeq === undefined ? {} : { modelSeq }),
    ...(tool === undefined ? {} : { tool }),
    ...(digest === undefined ? {} : { digest }),
  };
}

/** Whether `call` is what `ref` names: every field the ref gives matches. */
export const matchesRef = (call: CallIdentity, ref: CallRef): boolean =>
  call.callId === ref.callId &&
  (ref.modelSeq === undefined || ref.modelSeq === call.modelSeq) &&
  (ref.tool === undefined || ref.tool === call.tool) &&
  (ref.digest === undefined || ref.digest === call.digest);

/** The identity alone, without whatever else the value carries. */
export const identityOf = (call: CallIdentity): CallIdentity => ({
  modelSeq: call.modelSeq,
  callId: call.callId,
  tool: call.tool,
  ...(call.digest === undefined ? {} : { digest: call.digest }),
});
